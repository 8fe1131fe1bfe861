from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # Django's set_language: the Settings page's language switch posts here.
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("chat.account_urls")),
    path("api/memory/", include("memory.urls")),
    path("memory/", include("memory.page_urls")),
    path("", include("chat.urls")),
]

handler400 = "ikario_clone.errors.bad_request"
handler404 = "ikario_clone.errors.page_not_found"
handler500 = "ikario_clone.errors.server_error"
