"""Sign-up (a fresh install is usable from the browser alone; SIGNUP_OPEN=false closes it,
and the admin creates the accounts), the login page, and login throttling."""

import math

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods


@require_http_methods(["GET", "POST"])
def signup(request):
    if request.user.is_authenticated:
        return redirect("chat:home")
    if not settings.SIGNUP_OPEN:
        return render(request, "registration/signup_closed.html", status=403)
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("chat:home")
    status = 400 if request.method == "POST" else 200
    return render(request, "registration/signup.html", {"form": form}, status=status)


class LoginView(auth_views.LoginView):
    """Django's login page, offering sign-up only while it is open."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "signup_open": settings.SIGNUP_OPEN}


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' lockout check, for logins that come through a request.

    Every login form passes its request; a login without one (`Client.login` in tests, the
    shell) has no client address to throttle, where axes' own backend would raise.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def locked_out(request, original_response=None, credentials=None):
    """The page (429) django-axes answers with while a username+IP is locked out."""
    minutes = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
