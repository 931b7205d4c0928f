"""A server's question (elicitation), asked in a form: Accept, Decline or Cancel.

Threads. The question arrives on mcp_nb's loop thread, inside the call that the server asked
it in; the form is built, shown and clicked on the kernel's thread. `Asker` is what the call
awaits: it hands the form over to the kernel's thread and waits, on the loop, for a click.
The call's deadline stands still meanwhile (`Call.elicited`). Cancelling the call (the panel's
Cancel button, a reset) takes the question off the screen.

A click can only arrive while the kernel's thread is free, so a form is shown only by a face
that returns at once and lets the kernel go on: the panel (`Engine.submit`). A blocking
`mcp_nb.call` holds the kernel's thread until the call ends, so it never gets a form (its
question is answered from `elicit=`, the configured default, or cancelled, saying why).
"""

from __future__ import annotations

import asyncio
import contextvars
import html
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w
from IPython.display import display

from mcp_nb.elicitation import Answer
from mcp_nb.views.theme import BORDER, MUTED, SURFACE
from mcp_nb.widgets.callbacks import KernelThread, Settle, running_kernel
from mcp_nb.widgets.form import Form, Invalid, close_tree, dotted
from mcp_nb.widgets.style import problems_html


class Question:
    """One question on screen: the server's message, the form of its schema, three buttons."""

    def __init__(
        self, message: str, schema: Any, url: str | None, answer: Callable[[Answer], None], settle: Settle | None = None
    ) -> None:
        self._answer = answer
        # Accept sends what the form shows, its last changes included (`Settle`; with no kernel's
        # thread given, one that runs everything at once, as outside a kernel).
        self._settle = settle if settle is not None else Settle(KernelThread())
        self.form = Form(schema, self._settle.stamping) if url is None else None
        said = html.escape(message)
        if url is not None:
            link = html.escape(url, quote=True)
            said += f'<div>The server asks you to open <a href="{link}" target="_blank" rel="noopener">{link}</a></div>'
        self.message = w.HTML(
            f'<div style="{BORDER};border-radius:6px;{SURFACE};padding:4px 8px"><b>The server asks:</b> {said}</div>'
        )
        self.problems = w.HTML()
        self.problems.add_class("mcp-nb-problems")
        # A button keeps the width of its word (flex 0 0 auto): in a narrow panel the note
        # beside them wraps instead, where before the buttons shrank to "Acc…", "Decl…".
        self.accept = w.Button(description="Accept", icon="check", button_style="primary", layout=_button())
        self.decline = w.Button(description="Decline", icon="times", layout=_button())
        self.cancel = w.Button(description="Cancel", icon="ban", layout=_button())
        for button, name in ((self.accept, "accept"), (self.decline, "decline"), (self.cancel, "cancel")):
            button.add_class(f"mcp-nb-question-{name}")
        self.accept.on_click(self._accepted)
        # JupyterLab may deliver a click on a subshell's thread: the widgets change on the kernel's.
        self.decline.on_click(lambda _: self._settle.thread.hand_over(self.answer, "decline"))
        self.cancel.on_click(lambda _: self._settle.thread.hand_over(self.answer, "cancel"))
        note = w.HTML(
            f'<span style="{MUTED}">the call waits for your answer; its deadline stands still meanwhile</span>',
            layout=w.Layout(flex="1 1 auto", min_width="0"),
        )
        buttons = w.HBox(
            [self.accept, self.decline, self.cancel, note],
            layout=w.Layout(align_items="center", grid_gap="8px", flex_flow="row wrap"),
        )
        parts = [self.message] + ([self.form.widget] if self.form is not None else []) + [self.problems, buttons]
        self.widget = w.VBox(parts, layout=w.Layout(padding="4px 0", grid_gap="6px"))
        self.widget.add_class("mcp-nb-question")
        self.answered = False

    def _accepted(self, _button: Any = None) -> None:
        heard = time.monotonic()  # on the thread that heard the click
        settle = self._settle
        settle.thread.hand_over(settle.click, heard, lambda: self.answer("accept"), self.accept)

    def answer(self, action: str) -> None:
        """What a click does (on the kernel's thread): an accept sends the form's values, if they are valid."""
        if self.answered:
            return
        if action == "accept":
            try:
                content = self.form.value() if self.form is not None else None
            except Invalid as err:
                self.problems.value = problems_html(
                    "Nothing was sent:", [f"{dotted(p)}: {m}" if p else m for p, m in err.problems]
                )
                return
            given = Answer("accept", content)
        else:
            given = Answer(action)
        self.answered = True
        for button in (self.accept, self.decline, self.cancel):
            button.disabled = True
        self._answer(given)

    def close(self) -> None:
        close_tree(self.widget)


class Asker:
    """What a call awaits to ask a person: `await asker(message, schema, url)` -> Answer.

    `place(widgets)` puts the questions waiting for an answer on screen (several at once when a
    server batches them, as a 2026-07-28 input-required result does); it runs on the kernel's
    thread, through `enter(what, fn, *args)` (the panel's guard).
    """

    def __init__(
        self,
        enter: Callable[..., None],
        place: Callable[[list], None],
        closed: Callable[[], bool],
        settle: Settle,
    ) -> None:
        self._enter = enter
        self._settle = settle
        self._place = place
        self._closed = closed
        self.questions: dict[Callable[[Answer], None], Question] = {}  # on screen, by how each is answered
        self._waiting: set[Callable[[Answer], None]] = set()  # every question not yet answered

    async def __call__(self, message: str, schema: Any, url: str | None = None) -> Answer:
        if self._closed():
            return Answer.cancel()  # nobody is left to click
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Answer] = loop.create_future()

        def give(answer: Answer) -> None:  # from any thread
            loop.call_soon_threadsafe(lambda: answered.done() or answered.set_result(answer))

        self._waiting.add(give)
        self._enter("asking the server's question", self._show, message, schema, url, give)
        try:
            return await answered
        finally:
            self._waiting.discard(give)
            self._enter("taking the question off the screen", self._hide, give)

    def abandon(self) -> None:
        """The panel is closing: every question still waiting is cancelled."""
        for give in list(self._waiting):
            give(Answer.cancel())

    def _show(self, message: str, schema: Any, url: str | None, give: Callable[[Answer], None]) -> None:
        if give not in self._waiting:
            return  # answered (a cancelled call) before it reached the screen
        self.questions[give] = Question(message, schema, url, give, self._settle)
        self._place([q.widget for q in self.questions.values()])

    def _hide(self, give: Callable[[Answer], None]) -> None:
        question = self.questions.pop(give, None)
        if question is not None:
            self._place([q.widget for q in self.questions.values()])
            question.close()


def person_at_front_end() -> bool:
    """Whether the cell running now came from a front end where a person can answer.

    The same test as `input()`'s: JupyterLab, Notebook 7 and VS Code send a cell with
    `allow_stdin`; nbval, nbconvert and `jupyter execute` (nbclient) send it without, and there
    nobody could click a form either.
    """
    return bool(getattr(running_kernel(), "_allow_stdin", False))


def cell_asker() -> Asker | None:
    """An Asker that shows the questions in the output of the cell running now, or None where no
    form could be answered (outside a kernel, or with no widget front end connected).

    Only for a face that leaves the kernel's event loop running while it waits (`await
    mcp_nb.acall` in a cell: ipykernel 7 handles a click while a cell awaits, measured; a
    blocking wait gets it only after the cell ends).
    """
    thread = KernelThread.of_kernel()
    if thread.loop is None or not thread.here() or not person_at_front_end():
        return None
    # The cell's context carries the kernel's parent header: a display made in it goes to this cell.
    cell = contextvars.copy_context()
    boxes: list[w.VBox] = []  # made with the first question: most calls ask none

    def enter(what: str, fn: Callable[..., Any], *args: Any) -> None:
        thread.hand_over(cell.run, fn, *args)

    def place(widgets: list) -> None:
        if widgets and not boxes:
            box = w.VBox()
            box.add_class("mcp-nb-question-box")
            boxes.append(box)
            display(box)
        if boxes:
            boxes[0].children = tuple(widgets)

    return Asker(enter, place, lambda: False, Settle(thread))


def _button() -> w.Layout:
    return w.Layout(width="auto", flex="0 0 auto", min_width="fit-content")
