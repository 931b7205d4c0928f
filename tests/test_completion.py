"""<TAB> on the calling magics, through IPython's own completer: names, arguments, connections,
options, and the values a server suggests (`completion/complete`, server-everything's
completable prompt)."""

import peers
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:`Completer.complete` is pending deprecation:PendingDeprecationWarning")

import mcp_nb


def completed(shell, line: str) -> list[str]:
    _, matches = shell.complete("", line, len(line))
    return list(matches)


@pytest.fixture
def tools():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp_nb.tool()
    def adder_two(x: int) -> int:
        return x

    @mcp_nb.prompt()
    def greet(name: str, mood: str = "glad") -> str:
        return f"hello {name}"


def test_names_then_arguments_not_yet_given(shell, tools):
    assert completed(shell, "%mcp_call ad") == ["add", "adder_two"]
    assert completed(shell, "%mcp_call add ") == ["a=", "b="]
    assert completed(shell, "%mcp_call add a=1 ") == ["b="]
    assert completed(shell, "%mcp_get_prompt greet m") == ["mood="]
    # Nothing of ours to offer: IPython goes on to its own completions (magics, names), none of ours.
    assert not {"a=", "b=", "x="} & set(completed(shell, "%mcp_call nothing_like_it "))
    assert "--server" in completed(shell, "%mcp_call add --se")
    assert len(mcp_nb.history()) == 0  # completing calls nothing


def test_a_connection_is_completed_and_its_own_names_are_offered(shell, tools):
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    assert completed(shell, "%mcp_call --server ev") == ["everything"]
    assert completed(shell, "%mcp_call --server everything ec") == ["echo"]
    assert completed(shell, "%mcp_call --server everything echo ") == ["message="]
    assert "completable-prompt" in completed(shell, "%mcp_get_prompt --server everything ")
    # The values the server suggests for a prompt's argument, given what is already typed.
    line = "%mcp_get_prompt --server everything completable-prompt department="
    assert completed(shell, line) == ["Engineering", "Sales", "Marketing", "Support"]
    assert completed(shell, line + "Eng") == ["Engineering"]
    assert completed(shell, line + "Engineering name=") == ["Alice", "Bob", "Charlie"]
    assert len(mcp_nb.history()) == 0


def test_a_server_that_is_gone_offers_nothing_and_raises_nothing(shell, tools):
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    mcp_nb.disconnect("everything")
    assert connection.state == "closed"
    offered = completed(shell, "%mcp_get_prompt --server everything completable-prompt department=")
    assert "Engineering" not in offered  # nothing asked of a closed connection; IPython's own completions only
    completed(shell, "%mcp_call 'unclosed ")  # an open quote completes what is there, and raises nothing


def test_the_panels_prompt_fields_offer_what_the_server_suggests():
    from helpers import wait_until

    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    panel = mcp_nb.panel(server="everything")
    panel.picker.value = next(value for label, value in panel.picker.options if "completable-prompt" in label)
    form = panel._entries[panel.picker.value].form
    department, name = form.fields["department"], form.fields["name"]
    assert wait_until(lambda: department.widget.options == ("Engineering", "Sales", "Marketing", "Support"))
    department.widget.value = "Eng"
    assert wait_until(lambda: department.widget.options == ("Engineering",))
    department.widget.value = "Engineering"  # the team members depend on the department chosen
    assert wait_until(lambda: name.widget.options == ("Alice", "Bob", "Charlie"))
    name.widget.value = "Someone else"  # a suggestion, not a rule: any text is sent
    assert form.value() == {"department": "Engineering", "name": "Someone else"}
    assert len(mcp_nb.history()) == 0  # suggestions are no calls
    panel.close()


# -- what the magic's own parser knows --------------------------------------------------------------


def test_the_options_offered_are_the_ones_the_magics_parser_knows(shell, tools):
    from mcp_nb.notebook.magics import McpMagics
    from mcp_nb.notebook.options import option_names

    for magic in ("mcp_call", "mcp_read", "mcp_get_prompt"):
        known = option_names(getattr(McpMagics, magic).parser)
        assert set(completed(shell, f"%{magic} add --")) >= set(known), magic
        assert not {"--retry", "--quiet"} & set(completed(shell, f"%{magic} add --")), magic  # once offered, never options
    assert "--reset-on-progress" in completed(shell, "%mcp_call add --re")
    assert "--reset-on-progress" not in completed(shell, "%mcp_read add --re")  # a tool's call only


def test_an_options_value_is_not_taken_for_the_name_or_an_argument(shell, tools):
    assert completed(shell, "%mcp_call --timeout 5 add ") == ["a=", "b="]
    assert completed(shell, "%mcp_call --timeout=5 add a=1 ") == ["b="]
    assert not {"a=", "b="} & set(completed(shell, "%mcp_call add --timeout "))  # seconds come next, not an argument
    assert completed(shell, "%mcp_call --server ker") == ["kernel"]
    assert completed(shell, "%mcp_call --server kernel --timeout 5 ad") == ["add", "adder_two"]


def test_after_the_end_of_options_every_word_is_an_argument(shell, tools):
    assert completed(shell, "%mcp_call add -- ") == ["a=", "b="]
    assert completed(shell, "%mcp_call add -- a=1 ") == ["b="]
    assert "--timeout" not in completed(shell, "%mcp_call add -- --ti")
    assert len(mcp_nb.history()) == 0
