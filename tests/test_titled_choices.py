"""Titled choices in a form: MCP's titled single select (`oneOf` of `const` + `title`), titled
multi select (`items.anyOf` of the same) and the legacy `enum` + `enumNames` show their titles
in a dropdown and send the values. Checked on the spec's shapes and on the schema
server-everything really sends with its elicitation request."""

import peers

import mcp_nb
from mcp_nb.widgets.form import ChoiceField, MultiSelectField, build_form, label_html

SPEC = {
    "type": "object",
    "properties": {
        "color": {"type": "string", "oneOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#00FF00", "title": "Green"}]},
        "colors": {
            "type": "array",
            "items": {"anyOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#0000FF", "title": "Blue"}]},
        },
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Option A", "Option B"]},
    },
    "required": ["color"],
}


def labels(field):
    return [label for label, _ in field.widget.options]


def test_titles_are_shown_and_values_are_sent():
    form = build_form(SPEC)
    color, colors, legacy = (form.fields[name] for name in ("color", "colors", "legacy"))
    assert isinstance(color, ChoiceField) and labels(color) == ["Red", "Green"]
    assert isinstance(colors, MultiSelectField) and labels(colors) == ["Red", "Blue"]
    assert isinstance(legacy, ChoiceField) and labels(legacy)[1:] == ["Option A", "Option B"]
    color.widget.index, colors.widget.index, legacy.widget.index = 1, (0, 1), 2
    assert form.value() == {"color": "#00FF00", "colors": ["#FF0000", "#0000FF"], "legacy": "b"}
    assert ">enum<" in label_html("color", SPEC["properties"]["color"], True, SPEC)
    assert ">array[enum]<" in label_html("colors", SPEC["properties"]["colors"], False, SPEC)
    assert "any | any" not in label_html("color", SPEC["properties"]["color"], True, SPEC)


def test_server_everythings_titled_enums_become_dropdowns():
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    forms = []

    def answer(message, schema):
        forms.append(build_form(schema))
        return "decline"

    mcp_nb.call("trigger-elicitation-request", server="everything", elicit=answer)
    (form,) = forms
    titled = {name: field for name, field in form.fields.items() if name.startswith("titled")}
    assert set(titled) >= {"titledSingleSelectEnum", "titledMultipleSelectEnum"}, list(form.fields)
    assert isinstance(titled["titledSingleSelectEnum"], ChoiceField)
    assert isinstance(titled["titledMultipleSelectEnum"], MultiSelectField)
    for field in titled.values():
        shown = [label for label in labels(field) if not label.startswith("—")]
        assert shown and all(label != "any" for label in shown), shown
