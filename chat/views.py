"""The chat pages: new chat, a conversation, sidebar actions, and the user's settings."""

from __future__ import annotations

from urllib.parse import urlsplit

from asgiref.sync import async_to_sync
from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, reswap, trigger_client_event

from chat import answers, edge, incognito, llm, search, selectors, services, streaming
from chat.models import Conversation

# SQLite integers are 64-bit; an offset past a billion conversations is not a page.
MAX_OFFSET = 10**9
MAX_ID = 2**63 - 1


def _page_context(request, conversation: Conversation | None):
    conversations, has_more = selectors.sidebar_page(user=request.user)
    listed = conversation is not None and not conversation.incognito
    if listed and all(c.pk != conversation.pk for c in conversations):
        conversations.append(conversation)  # the open conversation is always in the list
    return {
        "conversation": conversation,
        "groups": selectors.group_by_recency(conversations),
        "has_more": has_more,
        "next_offset": selectors.SIDEBAR_PAGE,
        "models": llm.available_models(),
        "current_model": conversation.model
        if conversation and conversation.model
        else services.user_default_model(request.user),
        "offline": llm.is_offline(),
        "offline_label": _("Offline responder"),
    }


@login_required
@require_GET
def home(request):
    """The new-chat page; `?incognito=1` starts an incognito chat (chat/incognito.py)."""
    context = _page_context(request, None)
    context["incognito"] = request.GET.get("incognito") == "1"
    return render(request, "chat/chat.html", context)


@login_required
@require_GET
def conversation_page(request, pk):
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    context = _page_context(request, conversation)
    window = selectors.message_window(conversation=conversation, at=_message_id(request))
    # An answer a dead process left "streaming", even mid-conversation, shows as stopped.
    streaming.shown_as_stopped([*window.earlier, *window.latest])
    context.update(chat_messages=window.latest, earlier_messages=window.earlier, window=window)
    last = window.latest[-1] if window.latest else None
    if last is not None and last.status == last.Status.STREAMING:
        # The page's socket says so: the answer is then shown as it is when it connects.
        context["following"] = last.pk
    return render(request, "chat/chat.html", context)


def _message_id(request) -> int | None:
    """?m=<id>: the message a search hit opens the page at (anything else: none)."""
    raw = request.GET.get("m", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else None


@login_required
@require_GET
@vary_on_headers("HX-Request")
def conversation_search(request):
    """Search chats: the results fragment for the sidebar box, or the page without JS."""
    query = request.GET.get("q", "")[: search.MAX_QUERY_CHARS]
    hits = search.search_messages(user=request.user, query=query) if query.strip() else []
    context = {"search_query": query, "search_hits": hits}
    if request.htmx:
        return render(request, "chat/chat.html#search_results", context)
    return render(request, "chat/chat.html", {**_page_context(request, None), **context})


@login_required
@require_POST
def conversation_new(request):
    """The first message of a new chat: saved here, answered over the page's WebSocket."""
    content = request.POST.get("content", "")
    is_incognito = request.POST.get("incognito") == "1"
    try:
        services.clean_content(content)
        # Another chat starts: an incognito one the user had is over (chat/incognito.py),
        # and so is any left abandoned by anyone (a process that died in its grace period).
        incognito.end_for_user(request.user)
        incognito.sweep_abandoned()
        conversation = services.conversation_create(
            user=request.user, model=request.POST.get("model", ""), incognito=is_incognito
        )
        services.message_send(conversation=conversation, content=content)
    except services.ChatInputError as exc:
        context = _page_context(request, None)
        context.update(form_error=exc.reason, draft=content, incognito=is_incognito)
        return render(request, "chat/chat.html", context, status=400)
    return redirect("chat:conversation", pk=conversation.pk)


def _sidebar_response(request, current_id=None):
    current = None
    if current_id:
        current = Conversation.objects.filter(pk=current_id, user=request.user).first()
    return render(request, "chat/chat.html#conversation_list", _page_context(request, current))


def _current_id(request):
    """The conversation open in the page (0: none, or not a usable id)."""
    try:
        return edge.int_param("current", request.POST.get("current"), default=0, low=0, high=MAX_ID)
    except services.ChatInputError:
        return 0


@login_required
@require_POST
def conversation_rename(request, pk):
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    try:
        services.conversation_update(conversation=conversation, title=request.POST.get("title"))
    except services.ChatInputError as exc:
        return HttpResponse(exc.sentence(), status=400, content_type="text/plain")
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    response = _sidebar_response(request, _current_id(request))
    if _current_id(request) == pk:
        # The open chat: its heading and the tab's title change with it (htmx takes both).
        renamed = render_to_string("chat/stream.html#renamed", {"conversation": conversation})
        response.content += renamed.encode()
    return response


@login_required
@require_POST
def conversation_pin(request, pk):
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    services.conversation_update(conversation=conversation, pinned=not conversation.pinned)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return _sidebar_response(request, _current_id(request))


@login_required
@require_POST
def conversation_delete(request, pk):
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    # An answer still being written in it stops (answers outlive their page, not their chat).
    async_to_sync(answers.stop)(conversation.pk)
    conversation.delete()
    current = _current_id(request)
    if not request.htmx:
        return redirect("chat:home")
    if current == pk or _open_in_page(request, pk):
        # The page showing it goes to a new chat, in place of the deleted chat's address:
        # Back and a reload then find no dead page (chat.js reads the event).
        response = reswap(HttpResponse(), "none")
        return trigger_client_event(response, "chatDeleted", {"to": reverse("chat:home")})
    return _sidebar_response(request, current)


def _open_in_page(request, pk) -> bool:
    """Whether the page that asked shows conversation `pk` (htmx says which page it is,
    whichever list the row came from: the first page, "Show more", a re-rendered list)."""
    shown = urlsplit(request.htmx.current_url_abs_path or "").path
    return shown == reverse("chat:conversation", args=[pk])


@login_required
@require_POST
def conversation_leave(request, pk):
    """Leave an incognito chat explicitly: it ends now (chat/incognito.py)."""
    conversation = get_object_or_404(Conversation, pk=pk, user=request.user, incognito=True)
    async_to_sync(answers.stop)(conversation.pk)  # an answer still written ends with its chat
    conversation.delete()
    if request.htmx:
        return HttpResponseClientRedirect(reverse("chat:home"))
    return redirect("chat:home")


@login_required
@require_POST
def conversation_model(request, pk):
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    try:
        services.conversation_update(conversation=conversation, model=request.POST.get("model"))
    except services.ChatInputError as exc:
        return HttpResponse(exc.sentence(), status=400, content_type="text/plain")
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return HttpResponse(status=204)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def sidebar_more(request):
    try:
        offset = edge.int_param(
            "offset", request.GET.get("offset"), default=0, low=0, high=MAX_OFFSET
        )
    except services.ChatInputError as exc:
        return HttpResponse(f"Offset {exc.reason}.", status=400, content_type="text/plain")
    conversations, has_more = selectors.sidebar_page(user=request.user, offset=offset)
    return render(
        request,
        "chat/chat.html#sidebar_more",
        {
            "groups": selectors.group_by_recency(conversations),
            "has_more": has_more,
            "next_offset": offset + selectors.SIDEBAR_PAGE,
        },
    )


class PreferencesForm(forms.Form):
    custom_instructions = forms.CharField(
        label=_("Custom instructions"),
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text=_("Added to the assistant’s system prompt in every conversation."),
    )
    default_model = forms.ChoiceField(
        label=_("Default model"), choices=(), help_text=_("Used for new chats.")
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["default_model"].choices = [(m, m) for m in llm.available_models()]


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request):
    prefs = services.preferences_for(request.user)
    saved = False
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            prefs.custom_instructions = form.cleaned_data["custom_instructions"]
            prefs.default_model = form.cleaned_data["default_model"]
            prefs.save()
            saved = True
    else:
        form = PreferencesForm(
            initial={
                "custom_instructions": prefs.custom_instructions,
                "default_model": prefs.default_model or llm.default_model(),
            }
        )
    status = 400 if request.method == "POST" and not saved else 200
    return render(request, "chat/settings.html", {"form": form, "saved": saved}, status=status)
