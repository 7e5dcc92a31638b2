"""A Streamlit-protocol client that does not draw: one app session driven over the app's websocket.

It speaks to the server what a participant's browser speaks to it: it opens ``/_stcore/stream``, sends
``BackMsg`` protobufs (``rerun_script`` with the page, the address's query string, the widget states and
the hashes of the messages it holds) and reads the ``ForwardMsg`` protobufs the runs send back (new
elements and blocks at their delta paths, references to cached messages, the page's query string, the
periodic reruns of fragments, the end of each run). It keeps the page's elements by delta path and the
value of every widget on it as the browser's widget manager does:

- a widget shown for the first time takes its default from its element (``value`` when the server set
  it); a widget already known keeps the value the session gave it, unless the server sets a new one;
- at the end of a full run, the widgets the run did not show are dropped; a change of page keeps the
  sidebar's widgets only (the browser clears the main area before the new page runs);
- a rerun sends every widget's value (buttons and tables only when used, which this client does not).

What it does not do is draw: no layout, no Plotly rendering, no JavaScript. A load benchmark driving many
of these measures the server alone (its CPU, memory and the time until a run's messages arrive), where
browsers on the same machine would take its cores (``bench_workshop_load.py --client protocol``).

Widgets modelled: checkbox and toggle, number input, slider and select slider, radio, select box, multiselect,
text input and text area (their states as the browser sends them; checked against a browser's messages by
``tests/e2e/test_st_client_e2e.py``). Elements of other widget kinds are listed in
:attr:`StreamlitClient.unmodelled`: a page with one of them is sent without its value (the server then uses
the value it holds).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState

#: The app's websocket, relative to its base URL.
STREAM_PATH = "/_stcore/stream"
#: Widgets without a state until used (the browser sends them only when clicked or edited).
ALERT_ERROR = 1  # Alert.Format.ERROR: the box st.error draws
STATELESS = {"button", "download_button", "link_button", "page_link", "file_uploader", "dataframe", "menu_button",
             "button_group", "chat_input", "feedback", "pagination"}
#: Container path of the sidebar (the main area is 0).
SIDEBAR = 1
#: Script-run outcomes that end a full run (the others: a fragment's run).
#: The ends of a full run that leave the session idle. A run ended by ``st.rerun()`` (FINISHED_EARLY_FOR_RERUN) is
#: not one: the server reports "not running" for a moment and then starts the next run, so a wait must go on to
#: that run's end (a step that checks, then prepares, then draws the page again is three runs).
FULL_RUN_ENDS = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}


class ProtocolError(RuntimeError):
    """The server did not answer as the app's page should (an error shown, a missing page or widget, a timeout)."""


def element_key(element_id: str) -> str | None:
    """The user key of an element id ``$$ID-<hash>-<key>`` (``None`` for an element without a key)."""
    parts = element_id.split("-", 2)
    if len(parts) < 3 or parts[0] != "$$ID" or parts[2] == "None":
        return None
    return parts[2]


def _chosen(proto: Any, set_field: str, default: Callable[[], Any]) -> Any:
    """A single-valued widget's value: the server's (``set_field``) when it set one, else the element's default
    (``default()``); ``None`` when the one that applies is absent (an empty widget)."""
    if proto.set_value:
        return getattr(proto, set_field) if proto.HasField(set_field) else None
    return default() if proto.HasField("default") else None


def default_state(kind: str, proto: Any) -> WidgetState | None:
    """The state the browser gives a widget element when it first shows it (or when the server sets its value):
    ``None`` for a widget without a value (an empty number input, a select box with no choice)."""
    w = WidgetState(id=proto.id)
    if kind == "checkbox":
        w.bool_value = proto.value if proto.set_value else proto.default
    elif kind == "number_input":
        v = _chosen(proto, "value", lambda: proto.default)
        if v is None:
            return None
        if proto.data_type == NumberInput.INT:
            w.int_value = int(v)
        else:
            w.double_value = v
    elif kind == "slider":
        if proto.options:  # a select slider: the options' labels
            w.string_array_value.data.extend(
                proto.raw_value if proto.set_value else [proto.options[int(i)] for i in proto.default])
        else:
            w.double_array_value.data.extend(proto.value if proto.set_value else proto.default)
    elif kind in ("radio", "selectbox"):
        text = _chosen(proto, "raw_value", lambda: proto.options[proto.default])
        if text is None:
            return None
        w.string_value = text
    elif kind == "multiselect":
        w.string_array_value.data.extend(
            proto.raw_values if proto.set_value else [proto.options[i] for i in proto.default])
    elif kind in ("text_input", "text_area"):
        text = _chosen(proto, "value", lambda: proto.default)
        if text is None:
            return None
        w.string_value = text
    else:
        raise ValueError(f"no state model for a {kind} widget")
    return w


MODELLED = {"checkbox", "number_input", "slider", "radio", "selectbox", "multiselect", "text_input", "text_area"}


def state_value(w: WidgetState) -> Any:
    """The value a widget state holds (a list for the array states)."""
    which = w.WhichOneof("value")
    if which is None:
        return None
    v = getattr(w, which)
    return list(v.data) if which.endswith("_array_value") else v


@dataclass
class Shown:
    """An element on the page: its kind (the ``Element`` field set), its proto, the message's arrival time."""

    kind: str
    element: Any
    arrived: float
    run: int


@dataclass
class StreamlitClient:
    """One app session over the websocket of the Streamlit server at ``url`` (``http://host:port``).

    ``timeout`` bounds every wait, s. ``auto_rerun``: rerun the fragments the server asks to rerun
    periodically, as a browser does (the app's durability heartbeat)."""

    url: str
    timeout: float = 300.0
    auto_rerun: bool = True
    elements: dict[tuple[int, ...], Shown] = field(default_factory=dict)
    widgets: dict[str, WidgetState] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)  # page title → page script hash
    page_hash: str = ""
    query_string: str = ""
    errors: list[str] = field(default_factory=list)  # exceptions the runs showed (their messages)
    unmodelled: set[str] = field(default_factory=set)  # widget kinds shown without a state model
    received_bytes: int = 0
    bytes_by_kind: dict[str, int] = field(default_factory=dict)  # received bytes by element kind or message type
    runs_started: int = 0
    runs_finished: int = 0
    running: bool = False

    def __post_init__(self) -> None:
        self._ws: Any = None
        self._reader: asyncio.Task | None = None
        self._timers: dict[str, asyncio.Task] = {}
        self._cache: dict[str, ForwardMsg] = {}
        self._cond = asyncio.Condition()
        self._seen: set[tuple[int, ...]] = set()  # paths written by the current full run
        self._run_widgets: set[str] = set()
        self._closed: BaseException | None = None
        self._asked = 0  # full runs finished when the last rerun was asked for

    # -------------------------------------------------------------------------------------------------
    # Connection

    async def connect(self, query_string: str = "") -> None:
        """Open the websocket and run the app's default page (as a browser opening the address does; with
        ``query_string``, the address's parameters, e.g. a share link's ``policy=…``)."""
        from websockets.asyncio.client import connect

        ws_url = "ws" + self.url.removeprefix("http") + STREAM_PATH
        self._ws = await asyncio.wait_for(
            connect(ws_url, subprotocols=["streamlit"], max_size=None, compression=None), self.timeout)
        self._reader = asyncio.create_task(self._read())
        await self.rerun(page_hash="", query_string=query_string)

    async def close(self) -> None:
        for task in self._timers.values():
            task.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            try:
                await self._reader
            except Exception:  # noqa: BLE001 - the connection's end is what closing asks for
                pass

    async def __aenter__(self) -> "StreamlitClient":
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _read(self) -> None:
        try:
            async for data in self._ws:
                now = time.perf_counter()
                msg = ForwardMsg()
                msg.ParseFromString(data)
                async with self._cond:
                    self.received_bytes += len(data)
                    kind = msg.WhichOneof("type") or ""
                    if kind == "delta":
                        kind = msg.delta.new_element.WhichOneof("type") or msg.delta.WhichOneof("type") or kind
                    self.bytes_by_kind[kind] = self.bytes_by_kind.get(kind, 0) + len(data)
                    self._handle(msg, now)
                    self._cond.notify_all()
        except Exception as err:  # noqa: BLE001 - reported to every waiter
            self._closed = err
        finally:
            if self._closed is None:
                self._closed = ProtocolError("the server closed the websocket")
            async with self._cond:
                self._cond.notify_all()

    # -------------------------------------------------------------------------------------------------
    # Messages from the server

    def _handle(self, msg: ForwardMsg, now: float) -> None:
        if msg.WhichOneof("type") == "ref_hash":
            cached = self._cache.get(msg.ref_hash)
            if cached is None:
                self.errors.append(f"reference to a message not held: {msg.ref_hash}")
                return
            resolved = ForwardMsg()
            resolved.CopyFrom(cached)
            resolved.metadata.CopyFrom(msg.metadata)
            msg = resolved
        elif msg.metadata.cacheable and msg.hash:
            self._cache[msg.hash] = msg
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.runs_started += 1
            self._seen, self._run_widgets = set(), set()
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
        elif kind == "navigation":
            self.pages = {p.page_name: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "delta":
            self._delta(msg, now)
        elif kind == "auto_rerun" and self.auto_rerun:
            self._schedule(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "script_finished":
            if msg.script_finished in FULL_RUN_ENDS:
                self.runs_finished += 1
            if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                self._prune()

    def _delta(self, msg: ForwardMsg, now: float) -> None:
        path = tuple(msg.metadata.delta_path)
        delta = msg.delta
        which = delta.WhichOneof("type")
        if which == "add_block":
            self.elements[path] = Shown("block", delta.add_block, now, self.runs_started)
            self._seen.add(path)
        if which != "new_element":
            return
        el: Element = delta.new_element
        kind = el.WhichOneof("type") or ""
        proto = getattr(el, kind) if kind else None
        self.elements[path] = Shown(kind, proto, now, self.runs_started)
        self._seen.add(path)
        if kind == "exception":
            self.errors.append(f"{proto.type}: {proto.message}")
        wid = getattr(proto, "id", "") if proto is not None else ""
        if not wid or kind in STATELESS or kind == "plotly_chart":
            return
        self._run_widgets.add(wid)
        if kind not in MODELLED:
            self.unmodelled.add(kind)
            return
        if wid not in self.widgets or getattr(proto, "set_value", False):
            state = default_state(kind, proto)
            if state is not None:
                self.widgets[wid] = state
            else:
                self.widgets.pop(wid, None)

    def _prune(self) -> None:
        """The end of a full run: the elements and widgets it did not show are gone from the page."""
        self.elements = {p: s for p, s in self.elements.items() if p in self._seen or p[:1] not in ((0,), (1,))}
        self.widgets = {k: w for k, w in self.widgets.items() if k in self._run_widgets}

    def _schedule(self, fragment_id: str, interval: float) -> None:
        old = self._timers.pop(fragment_id, None)
        if old is not None:
            old.cancel()

        async def tick() -> None:
            while True:
                await asyncio.sleep(interval)
                await self._send(fragment_id=fragment_id, is_auto_rerun=True)

        self._timers[fragment_id] = asyncio.get_running_loop().create_task(tick())

    # -------------------------------------------------------------------------------------------------
    # Messages to the server

    async def _send(self, *, page_hash: str | None = None, query_string: str | None = None,
                    fragment_id: str = "", is_auto_rerun: bool = False) -> None:
        state = ClientState(query_string=self.query_string if query_string is None else query_string,
                            page_script_hash=self.page_hash if page_hash is None else page_hash,
                            fragment_id=fragment_id, is_auto_rerun=is_auto_rerun)
        state.widget_states.widgets.extend(self.widgets.values())
        state.cached_message_hashes.extend(self._cache)
        ctx = state.context_info
        ctx.timezone, ctx.timezone_offset, ctx.locale = "UTC", 0, "en-US"
        ctx.url = self.url + "/" + ("?" + state.query_string if state.query_string else "")
        msg = BackMsg()
        msg.rerun_script.CopyFrom(state)
        if self._closed is not None:
            raise ProtocolError(f"the websocket is closed: {self._closed}")
        await self._ws.send(msg.SerializeToString())

    async def rerun(self, *, page_hash: str | None = None, query_string: str | None = None) -> float:
        """Ask for a full run (of ``page_hash``, default: the current page) with the widgets' states; return
        when it was sent (``time.perf_counter``). :meth:`wait_idle` waits for its end."""
        async with self._cond:
            self._asked = self.runs_finished
        t0 = time.perf_counter()
        await self._send(page_hash=page_hash, query_string=query_string)
        return t0

    async def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        """Wait until ``predicate()`` (read under the client's lock after each message) is true."""
        async with self._cond:
            async def until() -> None:
                while not predicate():
                    if self._closed is not None:
                        raise ProtocolError(f"the websocket closed while waiting for {what}: {self._closed}")
                    await self._cond.wait()
            try:
                await asyncio.wait_for(until(), self.timeout if timeout is None else timeout)
            except asyncio.TimeoutError:
                raise ProtocolError(f"timed out after {self.timeout:g} s waiting for {what}") from None

    async def wait_idle(self) -> None:
        """Wait for the end of the run last asked for (and any run it started): nothing running."""
        asked = self._asked
        await self.wait_for(lambda: self.runs_finished > asked and not self.running, "the end of the run")
        if self.errors:
            raise ProtocolError("the page showed an error: " + "; ".join(self.errors[-3:]))

    # -------------------------------------------------------------------------------------------------
    # The page

    async def open_page(self, title: str) -> None:
        """Go to the page titled ``title`` (its link in the sidebar's navigation) and wait for its run's end.
        As in the browser, the address loses its query string and the main area's widgets are dropped."""
        if title not in self.pages:
            raise ProtocolError(f"no page {title!r} in the navigation (pages: {', '.join(self.pages)})")
        self.widgets = {k: w for k, w in self.widgets.items() if self._in_sidebar(k)}
        await self.rerun(page_hash=self.pages[title], query_string="")
        await self.wait_idle()

    def _in_sidebar(self, widget_id: str) -> bool:
        return any(p[:1] == (SIDEBAR,) and getattr(s.element, "id", None) == widget_id
                   for p, s in self.elements.items())

    def find(self, kind: str, where: Callable[[Any], bool] = lambda _: True) -> tuple[tuple[int, ...], Any]:
        """The first element of ``kind`` on the page (in the page's order) for which ``where(proto)`` holds."""
        for path in sorted(self.elements):
            shown = self.elements[path]
            if shown.kind == kind and where(shown.element):
                return path, shown.element
        raise ProtocolError(f"no {kind} element on the page matches")

    def shown(self, kind: str, key: str) -> Shown:
        """The element of ``kind`` with user key ``key``, with when it arrived."""
        return self.elements[self.find(kind, lambda e: element_key(e.id) == key)[0]]

    def error_alerts(self) -> list[str]:
        """The texts of the error boxes (``st.error``) the page shows now, in the page's order."""
        return [s.element.body for _, s in sorted(self.elements.items())
                if s.kind == "alert" and s.element.format == ALERT_ERROR]

    def keyed(self, kind: str, key: str) -> Any:
        """The element (its proto) of ``kind`` with user key ``key``."""
        return self.shown(kind, key).element

    def value(self, widget_id: str) -> Any:
        """The value the session holds for a widget (what its next rerun sends)."""
        w = self.widgets.get(widget_id)
        return None if w is None else state_value(w)

    async def set_number(self, widget_id: str, value: float) -> float:
        """Type ``value`` into a number input and press Enter: its new state is sent with every other widget's
        in a full rerun. Returns the time it was sent (``time.perf_counter``)."""
        w = self.widgets.get(widget_id)
        if w is None:
            raise ProtocolError(f"no number input {widget_id!r} on the page")
        new = WidgetState(id=widget_id)
        if w.WhichOneof("value") == "int_value":
            new.int_value = int(value)
        else:
            new.double_value = float(value)
        self.widgets[widget_id] = new
        return await self.rerun()

    async def choose(self, widget_id: str, value: str | list[str]) -> float:
        """Pick ``value`` in a select box or radio (a list: a multiselect's choices) and send a full rerun with
        every widget's state. Returns the time it was sent."""
        if widget_id not in self.widgets and not any(getattr(s.element, "id", None) == widget_id
                                                     for s in self.elements.values()):
            raise ProtocolError(f"no select box {widget_id!r} on the page")
        new = WidgetState(id=widget_id)
        if isinstance(value, list):
            new.string_array_value.data.extend(value)
        else:
            new.string_value = value
        self.widgets[widget_id] = new
        return await self.rerun()

    async def check(self, widget_id: str, value: bool) -> float:
        """Tick (or untick) a checkbox or toggle and send a full rerun. Returns the time it was sent."""
        if widget_id not in self.widgets:
            raise ProtocolError(f"no checkbox {widget_id!r} on the page")
        self.widgets[widget_id] = WidgetState(id=widget_id, bool_value=bool(value))
        return await self.rerun()

    async def click(self, widget_id: str) -> float:
        """Press a button: one full rerun whose widget states carry the button's trigger (as the browser sends it,
        once; the next rerun does not repeat it). Returns the time it was sent."""
        if not any(s.kind == "button" and getattr(s.element, "id", None) == widget_id for s in self.elements.values()):
            raise ProtocolError(f"no button {widget_id!r} on the page")
        self.widgets[widget_id] = WidgetState(id=widget_id, trigger_value=True)
        try:
            return await self.rerun()
        finally:
            self.widgets.pop(widget_id, None)

    def key_id(self, kind: str, key: str, *, prefix: bool = False) -> str:
        """The element id of the widget of ``kind`` whose user key is ``key`` (or starts with it: ``prefix``, for
        keys that end with a per-table suffix)."""
        def match(e: Any) -> bool:
            k = element_key(getattr(e, "id", "")) or ""
            return k.startswith(key) if prefix else k == key
        return str(self.find(kind, match)[1].id)


def plotly_data(chart: Any) -> str:
    """The traces of a Plotly chart element (its figure's ``data``), as canonical JSON: differs whenever a curve
    moves."""
    return json.dumps(json.loads(chart.spec).get("data", []), sort_keys=True)
