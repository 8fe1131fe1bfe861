"""The memory controls (memory/client/controls.py) as the memory page and the chat show them:
memory on, pause, "save conversations to memory", "search and reference past chats", reset (typed
confirmation), and a conversation's own memory switch in its menu."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from chat.selectors import conversation_for_user
from memory.client import controls, jobs, live
from memory.client.errors import MemoryServiceError
from memory.display.forms import ControlsForm, ResetForm, reset_phrase
from memory.web.page import PAGE, problem
from memory.web.tools import accepted, busy_or_invalid


def _controls(request, status=200, **extra):
    context = {
        "memory_settings": controls.settings_of(request.user),
        "reference_past_chats": controls.reference_past_chats(request.user),
        "reset_phrase": reset_phrase(),
        **extra,
    }
    return render(request, f"{PAGE}#controls", context, status=status)


@login_required
@require_POST
def switch(request):
    """One control at a time: `control` (enabled, paused, autosave, past_chats) and `on`."""
    form = ControlsForm(request.POST)
    if not form.is_valid():
        return _controls(request, status=400, controls_error=_("Unknown control."))
    control, on = form.cleaned_data["control"], form.cleaned_data["on"]
    if control == "enabled":
        controls.set_memory_enabled(user=request.user, on=on)
        said = _("Memory on.") if on else _("Memory off: nothing is recalled or saved.")
    elif control == "paused":
        controls.set_paused(user=request.user, paused=on)
        said = _("Memory paused: nothing new is saved.") if on else _("Memory resumed.")
    elif control == "autosave":
        controls.set_autosave(user=request.user, on=on)
        said = _("Conversations are saved to memory.") if on else _("Conversations are not saved.")
    else:
        controls.set_reference_past_chats(user=request.user, on=on)
        said = _("Claude may search your past chats.") if on else _("Past chats are off.")
    live.toast(user=request.user, text=said)
    # The header indicator says the new state at once.
    return trigger_client_event(_controls(request), "memory-state-changed")


@login_required
@require_POST
def reset(request):
    form = ResetForm(request.POST)
    if not form.is_valid():
        return _controls(request, status=400, reset_form=form)
    try:
        job = jobs.start_reset(user=request.user, request=request)
    except MemoryServiceError as exc:
        form.add_error("confirmation", problem(exc))
        return _controls(request, status=busy_or_invalid(exc), reset_form=form)
    # A reset of tens of thousands of memories outlasts a request: a background job, whose
    # progress the controls follow (memory/job.html).
    return accepted(_controls(request, job=job), job)


@login_required
@require_POST
def conversation_switch(request, conversation_id: int):
    """A conversation's memory on or off (its menu in the sidebar)."""
    conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
    on = request.POST.get("on") == "1"
    controls.set_conversation_memory(conversation=conversation, on=on)
    context = {"menu_conversation": conversation, "memory_on_here": on, "memory_enabled": True}
    response = render(request, "memory/conversation_switch.html", context)
    return trigger_client_event(response, "memory-state-changed")
