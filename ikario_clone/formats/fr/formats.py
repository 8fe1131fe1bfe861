# Dates as a French reader writes them: "26 nov. 2026" (settings.FORMAT_MODULE_PATH).
DATE_FORMAT = "j N Y"
DATETIME_FORMAT = "j N Y, H:i"
MONTH_DAY_FORMAT = "j N"  # "jusqu'au 12 déc."
