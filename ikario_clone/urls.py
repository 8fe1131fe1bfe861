from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("chat.account_urls")),
    path("api/memory/", include("memory.urls")),
    path("memory/", include("memory.page_urls")),
    path("", include("chat.urls")),
]
