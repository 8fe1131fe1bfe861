"""The app's 400, 404 and 500 answers: its own pages, and JSON under /api/ (clients parse it)."""

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views import defaults


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception):
    # A body past DATA_UPLOAD_MAX_MEMORY_SIZE (multipart fields) is what HTTP calls 413.
    too_big = isinstance(exception, RequestDataTooBig)
    if _is_api(request):
        reason = "body too large" if too_big else "bad request"
        return JsonResponse(
            {"error": {"field": None, "reason": reason}}, status=413 if too_big else 400
        )
    response = defaults.bad_request(request, exception)
    if too_big:
        response.status_code = 413
    return response


def page_not_found(request, exception):
    if _is_api(request):
        return JsonResponse({"error": {"field": None, "reason": "not found"}}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse({"error": {"field": None, "reason": "server error"}}, status=500)
    return defaults.server_error(request)
