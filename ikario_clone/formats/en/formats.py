# Dates as a person writes them: "26 Nov 2026" (settings.FORMAT_MODULE_PATH).
DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i"
MONTH_DAY_FORMAT = "j M"  # "until 12 Dec"
