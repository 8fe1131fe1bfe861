"""The app's 404 and 500 answers: its own pages, and JSON under /api/ (clients parse it)."""

from django.http import JsonResponse
from django.views import defaults


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request, exception):
    if _is_api(request):
        return JsonResponse({"error": {"field": None, "reason": "not found"}}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse({"error": {"field": None, "reason": "server error"}}, status=500)
    return defaults.server_error(request)
