from django.urls import path

from chat import views

app_name = "chat"

urlpatterns = [
    path("", views.home, name="home"),
    path("c/new/", views.conversation_new, name="conversation-new"),
    path("c/<int:pk>/", views.conversation_page, name="conversation"),
    path("c/<int:pk>/rename/", views.conversation_rename, name="conversation-rename"),
    path("c/<int:pk>/pin/", views.conversation_pin, name="conversation-pin"),
    path("c/<int:pk>/delete/", views.conversation_delete, name="conversation-delete"),
    path("c/<int:pk>/model/", views.conversation_model, name="conversation-model"),
    path("c/<int:pk>/leave/", views.conversation_leave, name="conversation-leave"),
    path("sidebar/", views.sidebar_more, name="sidebar-more"),
    path("settings/", views.settings_page, name="settings"),
    path("search/", views.conversation_search, name="search"),
]
