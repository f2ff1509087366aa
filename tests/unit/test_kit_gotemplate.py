from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argocd_image_updater.kits.gotemplate import Template, TemplateError

DEFAULT_COMMIT_MESSAGE = (
    "build: automatic update of {{ .AppName }}\n"
    "\n"
    "{{ range .AppChanges -}}\n"
    "updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n"
    "{{ end -}}\n"
)
OLD_DIGEST = "sha256:01d09d19c2139a46aebfb577780d123d7396e97201bc7ead210a2ebff8239dee"
NEW_DIGEST = "sha256:7aa7a5359173d05b63cfd682e3c38487f3cb4f7f1d60659fe59fab1505977d4c"
LABELS_TEMPLATE = (
    "build: automatic update of {{ .AppName }}\n\n"
    "{{ range .AppChanges -}}\n"
    "updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n"
    '{{ if index .Labels "org.opencontainers.image.revision" -}}'
    'Upstream Commit: {{ index .Labels "org.opencontainers.image.source" }}/commit/'
    '{{ index .Labels "org.opencontainers.image.revision" }}\n'
    "{{ end -}}\n"
    "{{ end -}}\n"
)


def render(text: str, data: dict[str, Any] | None = None) -> str:
    return Template.parse(text).render(data or {})


def change(image: str, old: str, new: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"Image": image, "OldTag": old, "NewTag": new, "Labels": labels or {}}


def cli_template_data() -> dict[str, Any]:
    return {
        "AppName": "example-app",
        "AppChanges": [
            change("example/example", "1.0.0", "1.0.1"),
            change("example/updater", OLD_DIGEST, NEW_DIGEST),
        ],
    }


# ------------------------------------------------------------------ commit messages (§15a)


def test_default_commit_message_cm1() -> None:
    data = {
        "AppName": "foobar",
        "AppChanges": [change("foo/bar", "1.0", "1.1"), change("bar/baz", "2.0", "2.1")],
    }
    assert render(DEFAULT_COMMIT_MESSAGE, data) == (
        "build: automatic update of foobar\n\n"
        "updates image foo/bar tag '1.0' to '1.1'\n"
        "updates image bar/baz tag '2.0' to '2.1'\n"
    )


def test_template_command_output_cm6() -> None:
    # The `template` command prints the rendered text plus one newline.
    expected = (
        "build: automatic update of example-app\n"
        "\n"
        "updates image example/example tag '1.0.0' to '1.0.1'\n"
        f"updates image example/updater tag '{OLD_DIGEST}' to '{NEW_DIGEST}'\n"
        "\n"
    )
    assert render(DEFAULT_COMMIT_MESSAGE, cli_template_data()) + "\n" == expected


def test_custom_commit_message_cm7() -> None:
    text = (
        "Custom Commit Message:\nApp: {{.AppName}}\n{{- range .AppChanges }}\n"
        "- {{.Image}}: {{.OldTag}} -> {{.NewTag}}\n{{- end }}"
    )
    assert render(text, cli_template_data()) + "\n" == (
        "Custom Commit Message:\nApp: example-app\n- example/example: 1.0.0 -> 1.0.1\n"
        f"- example/updater: {OLD_DIGEST} -> {NEW_DIGEST}\n"
    )


def test_labels_add_upstream_commit_line_cm2() -> None:
    labels = {
        "org.opencontainers.image.source": "https://github.com/org/repo",
        "org.opencontainers.image.revision": "abc123",
    }
    data = {"AppName": "foobar", "AppChanges": [change("foo/bar", "1.0", "1.1", labels)]}
    assert render(LABELS_TEMPLATE, data) == (
        "build: automatic update of foobar\n\n"
        "updates image foo/bar tag '1.0' to '1.1'\n"
        "Upstream Commit: https://github.com/org/repo/commit/abc123\n"
    )


def test_no_labels_omit_upstream_commit_line_cm3() -> None:
    data = {"AppName": "foobar", "AppChanges": [change("foo/bar", "1.0", "1.1")]}
    assert render(LABELS_TEMPLATE, data) == (
        "build: automatic update of foobar\n\nupdates image foo/bar tag '1.0' to '1.1'\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "build: {{ .AppName\n",  # CM-8: missing }}
        "feat: update {{.AppName to {{.NewTag}}",  # CM-10
    ],
)
def test_invalid_commit_templates_fail_at_parse_time(text: str) -> None:
    with pytest.raises(TemplateError, match=r"^template: commit:1:\d+: "):
        Template.parse(text, "commit")


def test_execution_error_is_raised_for_the_caller_to_fall_back_cm5() -> None:
    tmpl = Template.parse("{{ .AppName.Foo }}", "commit")
    with pytest.raises(TemplateError, match="can't evaluate field Foo in type string"):
        tmpl.render({"AppName": "app"})


# -------------------------------------------------------------------- branch names (§15b)


def branch_data(*changes: tuple[str, str, str, str], **extra: str) -> dict[str, Any]:
    images = [{"Name": n, "Alias": a, "OldTag": o, "NewTag": t} for n, a, o, t in changes]
    sha = hashlib.sha256("".join(f"{n}-{o}-{t}," for n, _, o, t in changes).encode())
    return {"Images": images, "SHA256": sha.hexdigest(), **extra}


TWO_IMAGES = (("foo/bar", "foo/bar", "1.0", "1.1"), ("bar/baz", "bar/baz", "2.0", "2.1"))


@pytest.mark.parametrize(
    ("text", "data", "expected"),
    [
        (
            "image-updater{{range .Images}}-{{.Name}}-{{.NewTag}}{{end}}",
            branch_data(*TWO_IMAGES),
            "image-updater-foo/bar-1.1-bar/baz-2.1",
        ),
        (
            "image-updater{{range .Images}}-{{.Alias}}-{{.NewTag}}{{end}}",
            branch_data(("0001.dkr.ecr.us-east-1.amazonaws.com/bar", "bar", "1.0", "1.1")),
            "image-updater-bar-1.1",
        ),
        (
            "image-updater-{{.SHA256}}",
            branch_data(("foo/bar", "foo/bar", "1.0", "1.1")),
            "image-updater-0fcc2782543e4bb067c174c21bf44eb947f3e55c0d62c403e359c1c209cbd041",
        ),
        (
            "image-updater-{{.AppNamespace}}-{{.AppName}}",
            branch_data(*TWO_IMAGES, AppNamespace="my-namespace", AppName="my-app"),
            "image-updater-my-namespace-my-app",
        ),
        (
            "image-updater-{{.AppNamespace}}-{{.AppName}}",
            branch_data(*TWO_IMAGES, AppNamespace="", AppName=""),
            "image-updater--",
        ),
        (
            "{{.AppName}}{{range .Images}}-{{.Name}}-{{.NewTag}}{{end}}",
            branch_data(("nginx", "nginx", "1.0", "1.5"), AppName="my-app"),
            "my-app-nginx-1.5",
        ),
        (
            "image-updater-{{.TargetKey}}-{{.SHA256}}",
            branch_data(("foo/bar", "foo/bar", "1.0", "1.1"), TargetKey="abc12345"),
            "image-updater-abc12345-"
            "0fcc2782543e4bb067c174c21bf44eb947f3e55c0d62c403e359c1c209cbd041",
        ),
    ],
)
def test_branch_templates(text: str, data: dict[str, Any], expected: str) -> None:
    assert render(text, data) == expected


def test_branch_template_with_index_and_range_variables() -> None:
    text = "{{ range $i, $img := .Images }}{{ if $i }}_{{ end }}{{ $img.Alias }}{{ end }}"
    text += "-{{ slice .SHA256 0 8 }}"
    data = branch_data(*TWO_IMAGES)
    assert render(text, data) == f"foo/bar_bar/baz-{data['SHA256'][:8]}"


# ------------------------------------------------------------------------- the language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  {{- 1 -}}  \n\n b", "a1b"),
        ("a \n{{- /* comment\nover lines */ -}}\n b", "ab"),
        ("a{{/* c */}}b", "ab"),
        ("{{-3}}", "-3"),  # a number, not a trim marker
        ("x {{- .A}} {{.A -}} y", "x1 1y"),
        ("\n\t {{- 1}}", "1"),
    ],
)
def test_trim_markers_and_comments(text: str, expected: str) -> None:
    assert render(text, {"A": 1}) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ if .T }}t{{ end }}", "t"),
        ("{{ if .F }}t{{ else }}f{{ end }}", "f"),
        ("{{ if .F }}a{{ else if .Empty }}b{{ else if .T }}c{{ else }}d{{ end }}", "c"),
        ("{{ with .S }}[{{ . }}]{{ end }}", "[s]"),
        ("{{ with .Empty }}x{{ else with .S }}{{ . }}{{ else }}none{{ end }}", "s"),
        ("{{ with .Missing }}x{{ else }}none{{ end }}", "none"),
        ("{{ range .L }}<{{ . }}>{{ end }}", "<a><b>"),
        ("{{ range $i, $e := .L }}{{ $i }}={{ $e }} {{ end }}", "0=a 1=b "),
        ("{{ range $e := .L }}{{ $e }}{{ end }}", "ab"),
        ("{{ range $k, $v := .M }}{{ $k }}:{{ $v }} {{ end }}", "a:2 b:1 z:0 "),
        ("{{ range .M }}{{ . }}{{ end }}", "210"),
        ("{{ range .Empty }}x{{ else }}empty{{ end }}", "empty"),
        ("{{ range .Missing }}x{{ else }}none{{ end }}", "none"),
        ("{{ range 3 }}{{ . }}{{ end }}", "012"),
        ('{{ range .L }}{{ if eq . "a" }}{{ continue }}{{ end }}{{ . }}{{ end }}', "b"),
        ("{{ range .L }}{{ . }}{{ break }}{{ end }}", "a"),
        ("{{ $x := 1 }}{{ range .L }}{{ $x = . }}{{ end }}{{ $x }}", "b"),
        ("{{ range .L }}{{ $.S }}{{ end }}", "ss"),
        ("{{ $m := .M }}{{ $m.a }}", "2"),
        ("{{ (index .Nested 0).Name }}", "n0"),
        ('{{ .S | printf "%s-%s" "x" }}', "x-s"),
        ('{{ .L | len | printf "%d items" }}', "2 items"),
        ('{{ printf "%s" (print .T .F) }}', "true false"),
        (
            "{{ if and .T .S }}y{{ end }}{{ if or .F .Empty }}n{{ end }}{{ if not .F }}!{{ end }}",
            "y!",
        ),
        ("{{ and .T .S }} {{ and .F .S }} {{ or .F .S }} {{ or .F .Empty }}", "s false s []"),
        ("{{ and .Empty (index .Empty 0) }}", "[]"),  # short-circuits like Go
        ('{{ if eq .S "x" "s" }}y{{ end }}{{ if ne .I 4 }}n{{ end }}', "yn"),
        (
            '{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge "b" "a" }} {{ lt 1.5 2.5 }}',
            "true true false true true",
        ),
        ('{{ eq .Missing "x" }} {{ eq .Nil .Missing }}', "false true"),
        ('{{ len .S }} {{ len "héllo" }} {{ len .M }}', "1 6 3"),
        ('{{ index .L 1 }} {{ index .M "a" }} {{ index .Nested 1 "Name" }}', "b 2 n1"),
        ('[{{ index .Labels "missing" }}] {{ index .M "missing" }}', "[] <no value>"),
        ('{{ slice .L 1 }} {{ slice "hello" 1 3 }} {{ slice .L 0 1 2 }}', "[b] el [a]"),
        ('{{ print 1 2 "a" "b" 3 }}|{{ println "x" 1 }}|', "1 2ab3|x 1\n|"),
        ("{{ .Missing }} {{ .Missing.Deeper }} {{ .Nil }}", "<no value> <no value> <no value>"),
        ("{{ .L }} {{ .M }} {{ .Nested }}", "[a b] map[a:2 b:1 z:0] [map[Name:n0] map[Name:n1]]"),
        ("{{ .Mixed }}", "[1 true <nil> 1.5 x]"),
        (
            "{{ 1.0 }} {{ 1e6 }} {{ 123456789.0 }} {{ 0.0001 }} {{ 0.00001 }} {{ -2.5 }}",
            "1 1e+06 1.23456789e+08 0.0001 1e-05 -2.5",
        ),
        (
            "{{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 0b101 }} {{ 1_000 }} {{ 'a' }} {{ +4 }}",
            "31 15 15 5 1000 97 4",
        ),
        ('{{ "tab\\tq\\"\\u00e9\\x41" }} {{ `raw\\n` }}', 'tab\tq"éA raw\\n'),
        ("{{ true }} {{ false }}", "true false"),
    ],
)
def test_language(text: str, expected: str) -> None:
    data = {
        "T": True,
        "F": False,
        "S": "s",
        "I": 3,
        "Empty": [],
        "Nil": None,
        "L": ["a", "b"],
        "M": {"z": 0, "b": 1, "a": 2},
        "Nested": [{"Name": "n0"}, {"Name": "n1"}],
        "Labels": {"present": "yes"},
        "Mixed": [1, True, None, 1.5, "x"],
    }
    assert render(text, data) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('"%s|%v|%d|%t|%%" "a" "b" 42 true', "a|b|42|true|%"),
        ('"%q %q" "a\\"b\\n" 65', '"a\\"b\\n" \'A\''),
        ('"%x %X %x %#x" "hi" 255 -255 255', "6869 FF -ff 0xff"),
        ('"%5s|%-5s|%05d|%+d|%.2f|%.1s" "a" "b" 42 7 3.14159 "xyz"', "    a|b    |00042|+7|3.14|x"),
        ('"%v %v %v" .L .M .Nil', "[a b] map[k:1] <nil>"),
        ('"%s" .L', "[a b]"),
        ('"%d %s" "x" 1', "%!d(string=x) %!s(int=1)"),
        ('"%d %d" 1', "1 %!d(MISSING)"),
        ('"%d" 1 "extra" .Nil', "1%!(EXTRA string=extra, <nil>)"),
        ('"%z" 1', "%!z(int=1)"),
        ('"%s" .Nil', "%!s(<nil>)"),
        (
            '"%T %T %T %T %T" 1 "s" 1.5 .L .M',
            "int string float64 []interface {} map[string]interface {}",
        ),
        ('"%e %g %.3g" 1234.5678 0.000012 1234.5678', "1.234568e+03 1.2e-05 1.23e+03"),
        ('"%c %U %b %o" 65 65 5 8', "A U+0041 101 10"),
        ('"%*d|%-*d|" 4 7 3 1', "   7|1  |"),
        ('"abc%"', "abc%!(NOVERB)"),
    ],
)
def test_printf(args: str, expected: str) -> None:
    data = {"L": ["a", "b"], "M": {"k": 1}, "Nil": None}
    assert render("{{ printf " + args + " }}", data) == expected


@dataclass
class Change:
    Image: str
    NewTag: str


def test_dataclasses_behave_like_go_structs() -> None:
    data = {"C": Change("nginx", "1.2"), "Cs": [Change("a", "1")]}
    assert render("{{ .C.Image }}:{{ .C.NewTag }} {{ range .Cs }}{{ .Image }}{{ end }}", data) == (
        "nginx:1.2 a"
    )
    assert render('{{ .C }} {{ printf "%+v" .C }}', data) == "{nginx 1.2} {Image:nginx NewTag:1.2}"
    with pytest.raises(TemplateError, match="can't evaluate field Missing in type Change"):
        render("{{ .C.Missing }}", data)


def test_mapping_proxy_and_tuples_are_supported() -> None:
    from types import MappingProxyType

    data = {"M": MappingProxyType({"b": "2", "a": "1"}), "T": ("x", "y")}
    assert render('{{ .M }} {{ .T }} {{ index .M "zz" }}|{{ len .T }}', data) == (
        "map[a:1 b:2] [x y] |2"
    )


def test_template_can_be_rendered_many_times() -> None:
    tmpl = Template.parse("{{ .A }}")
    assert [tmpl.render({"A": n}) for n in range(3)] == ["0", "1", "2"]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="{"), max_size=40))
def test_plain_text_renders_unchanged(text: str) -> None:
    assert render(text) == text


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ .A ", "t:1:1: unclosed action"),
        ("x\n  {{ foo }}", 't:2:6: function "foo" not defined'),
        ("{{ html .A }}", 't:1:4: function "html" is not supported'),
        ("{{ end }}", "t:1:4: unexpected {{end}}"),
        ("{{ else }}", "t:1:4: unexpected {{else}}"),
        ("{{ if .A }}x", "t:1:13: unexpected EOF: missing {{end}}"),
        ("{{ if 1 }}{{ else }}{{ else }}{{ end }}", "expected {{end}}; found {{else}}"),
        ("{{ range .A }}{{ else if .B }}{{ end }}", 'unexpected "if" in else'),
        ("{{ $x }}", 't:1:4: undefined variable "$x"'),
        ("{{ $x = 1 }}", 'undefined variable "$x"'),
        ("{{ if $x := 1 }}{{ end }}{{ $x }}", 'undefined variable "$x"'),
        ('{{ .A | "x" }}', "t:1:9: non executable command in pipeline stage 2"),
        ("{{ .A | .B }}", "can't give argument to non-function .B"),
        ("{{ .A 1 }}", "can't give argument to non-function .A"),
        ("{{ nil }}", "nil is not a command"),
        ('{{ template "x" }}', "{{template}} is not supported"),
        ('{{ define "x" }}{{ end }}', "{{define}} is not supported"),
        ('{{ block "x" . }}{{ end }}', "{{block}} is not supported"),
        ("{{ break }}", "{{break}} outside {{range}}"),
        ("{{ if 1 }}{{ continue }}{{ end }}", "{{continue}} outside {{range}}"),
        ("{{ len 1 2 }}", "wrong number of args for len: want 1 got 2"),
        ("{{ 1 | not 2 }}", "wrong number of args for not: want 1 got 2"),
        ("{{ eq 1 }}", "wrong number of args for eq: want at least 2 got 1"),
        ("{{ printf }}", "wrong number of args for printf: want at least 1 got 0"),
        ("{{ print and }}", "wrong number of args for and: want at least 1 got 0"),
        ('{{ "abc }}', "unterminated quoted string"),
        ("{{ `abc }}", "unterminated raw quoted string"),
        ("{{ 'ab' }}", "malformed character constant"),
        ('{{ "\\q" }}', "invalid escape sequence \\q"),
        ("{{/* x }}", "t:1:1: unclosed comment"),
        ("{{/* x */ }}", "comment ends before closing delimiter"),
        ("{{ 08 }}", 'illegal number syntax: "08"'),
        ("{{ 1.A }}", "bad number syntax"),
        ("{{ 1i }}", "complex numbers are not supported"),
        ("{{ - }}", "bad number syntax"),
        ("{{ @ }}", "unrecognized character in action: U+0040 '@'"),
        ("{{ .A@ }}", "bad character U+0040 '@'"),
        ("{{ (.A }}", "unclosed left paren"),
        ("{{ .A) }}", "unexpected right paren"),
        ("{{ .A | }}", "missing command after |"),
        ("{{}}", "t:1:3: missing value for command"),
        ("{{ if }}{{ end }}", "missing value for if"),
        ('{{ "s".A }}', "unexpected . after term"),
        ("{{ $a, $b := .X }}", "too many declarations in command"),
        ("{{ range $a, 1 }}{{ end }}", 'unexpected "1" in range declaration'),
        ("{{ a: }}", "expected :="),
        ("{{ .A , }}", 'unexpected "," in operand'),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        Template.parse(text, "t")
    assert str(info.value).startswith("template: t:")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ .Nil.X }}", 't:1:3: executing "t" at <.Nil.X>: nil pointer evaluating interface {}.X'),
        ("{{ .S.X }}", "can't evaluate field X in type string"),
        ("{{ .L.X }}", "can't evaluate field X in type []interface {}"),
        ("{{ index .L 5 }}", "error calling index: index out of range: 5"),
        ('{{ index .L "a" }}', "cannot index slice/array with type string"),
        ("{{ index .Nil 0 }}", "error calling index: index of untyped nil"),
        ("{{ index 3 0 }}", "can't index item of type int"),
        ("{{ slice .L 2 1 }}", "invalid slice index: 2 > 1"),
        ("{{ slice .L 0 5 }}", "index out of range: 5"),
        ('{{ slice "ab" 0 1 2 }}', "cannot 3-index slice a string"),
        ("{{ slice 3 }}", "can't slice item of type int"),
        ("{{ len 3 }}", "error calling len: len of type int"),
        ("{{ len .Nil }}", "len of nil pointer"),
        ('{{ lt 1 "a" }}', "error calling lt: incompatible types for comparison"),
        ("{{ lt true false }}", "invalid type for comparison"),
        ("{{ eq 1 1.0 }}", "incompatible types for comparison"),
        ("{{ eq .L .L }}", "non-comparable types"),
        ("{{ printf 1 }}", "wrong type for value; expected string; got int"),
        ("{{ range .S }}{{ end }}", "range can't iterate over s"),
        ("{{ range $i, $e := 3 }}{{ end }}", "can't use two iteration variables with an int"),
        ("x\n{{ if .T }}\n  {{ .S.X }}{{ end }}", "t:3:5: executing"),
    ],
)
def test_execution_errors(text: str, message: str) -> None:
    data = {"Nil": None, "S": "s", "L": [1, 2], "T": True}
    tmpl = Template.parse(text, "t")
    with pytest.raises(TemplateError) as info:
        tmpl.render(data)
    assert message in str(info.value)


# --- opt-in extensions: extra functions and named templates ----------------------------------


def test_extra_functions_are_called_with_the_piped_value_last() -> None:
    funcs = {"upper": str.upper, "join": lambda sep, *items: sep.join(items)}
    tmpl = Template.parse('{{ .A | upper }} {{ join "-" "a" "b" .A }}', "t", funcs=funcs)
    assert tmpl.render({"A": "x"}) == "X a-b-x"


def test_extra_function_arity_is_checked_at_parse_time() -> None:
    def pair(a: str, b: str) -> str:
        return a + b

    with pytest.raises(TemplateError, match="wrong number of args for pair: want 2 got 1"):
        Template.parse('{{ pair "a" }}', "t", funcs={"pair": pair})
    assert Template.parse('{{ "b" | pair "a" }}', "t", funcs={"pair": pair}).render({}) == "ab"


def test_extra_function_errors_are_execution_errors() -> None:
    def fail(message: str) -> str:
        raise ValueError(message)

    tmpl = Template.parse('x\n {{ fail "boom" }}', "t", funcs={"fail": fail})
    with pytest.raises(TemplateError) as info:
        tmpl.render({})
    assert (
        str(info.value)
        == 'template: t:2:4: executing "t" at <fail "boom">: error calling fail: boom'
    )


def test_extra_functions_are_local_to_the_template_that_opts_in() -> None:
    Template.parse("{{ up . }}", "t", funcs={"up": str.upper})
    with pytest.raises(TemplateError, match='function "up" not defined'):
        Template.parse("{{ up . }}", "t")


def test_define_and_template_share_one_set_across_files() -> None:
    shared: dict[str, Template] = {}
    Template.parse(
        '{{- define "greet" -}}hello {{ . }}{{- end -}}\n{{ define "twice" }}{{ template "greet" . }}/{{ template "greet" . }}{{ end }}',
        "_helpers",
        templates=shared,
    )
    main = Template.parse(
        '[{{ template "twice" .Name }}]{{ template "greet" }}', "main", templates=shared
    )
    assert sorted(shared) == ["greet", "twice"]
    assert main.render({"Name": "bob"}) == "[hello bob/hello bob]hello <no value>"
    assert shared["greet"].render(42) == "hello 42"


def test_define_body_has_its_own_variables_and_dollar() -> None:
    shared: dict[str, Template] = {}
    tmpl = Template.parse(
        '{{ $x := "outer" }}{{ define "d" }}{{ $.A }}{{ end }}{{ template "d" .Inner }}{{ $x }}',
        "t",
        templates=shared,
    )
    assert tmpl.render({"Inner": {"A": "inner-a"}}) == "inner-aouter"
    with pytest.raises(TemplateError, match='undefined variable "\\$x"'):
        Template.parse('{{ $x := 1 }}{{ define "d" }}{{ $x }}{{ end }}', "t", templates={})


def test_block_defines_and_runs_its_body_and_a_later_define_overrides_it() -> None:
    shared: dict[str, Template] = {}
    tmpl = Template.parse('<{{ block "b" .A }}default {{ . }}{{ end }}>', "t", templates=shared)
    assert tmpl.render({"A": 1}) == "<default 1>"
    Template.parse('{{ define "b" }}override {{ . }}{{ end }}', "u", templates=shared)
    assert tmpl.render({"A": 1}) == "<override 1>"


def test_an_empty_define_does_not_replace_an_existing_one() -> None:
    shared: dict[str, Template] = {}
    Template.parse('{{ define "x" }}full{{ end }}', "a", templates=shared)
    Template.parse('{{ define "x" }}  {{ end }}', "b", templates=shared)
    assert shared["x"].render(None) == "full"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{{ template "missing" }}',
            't:1:12: executing "t" at <{{template "missing"}}>: template "missing" not defined',
        ),
        (
            '{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}',
            "exceeded maximum template depth (100)",
        ),
        (
            '{{ define "e" }}\n{{ len 3 }}{{ end }}{{ template "e" . }}',
            'template: t:2:3: executing "e" at <len 3>',
        ),
    ],
)
def test_named_template_execution_errors(text: str, message: str) -> None:
    tmpl = Template.parse(text, "t", templates={})
    with pytest.raises(TemplateError) as info:
        tmpl.render({})
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{{ if 1 }}{{ define "x" }}{{ end }}{{ end }}', "unexpected {{define}} inside an action"),
        ("{{ define x }}{{ end }}", 'unexpected "x" in define clause'),
        ('{{ define "x" }}', "missing {{end}}"),
        ('{{ block "x" }}{{ end }}', "missing pipeline in block clause"),
        ('{{ template "x" | }}', 'unexpected "|" in template clause'),
    ],
)
def test_named_template_parse_errors(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        Template.parse(text, "t", templates={})
