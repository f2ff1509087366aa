"""Cases from Go's ``text/template/exec_test.go`` (``execTests``, ``cmpTests``, ``TestExecError``,
``TestMaxExecDepth``, ``TestTree``), adapted to the package's data model: Go's ``tVal`` struct is
a dict (``T``), its nested struct ``U`` a dataclass, pointers their values. Inputs and outputs are
Go's; ``ok=False`` means execution (or, here, parsing) fails.

Left out: methods, ``call``, complex numbers, ``html``/``js``/``urlquery`` (not in the subset),
typed nil pointers (``None`` is an untyped nil here), channels and iterators, ``SICap``
(capacity), key types (a dict has none: ``{{.MII.one}}``, ``{{index .MSI 10}}`` and
``{{index .MSI nil}}`` do not fail) and the zero value of an int map (``{{index .MSI "XXX"}}``
prints ``<no value>``, not ``0``), and argument type checks of extra functions (``{{1|oneArg}}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from argocd_image_updater.kits.gotemplate import Template, TemplateError
from argocd_image_updater.kits.gotemplate.formatting import go_sprint


@dataclass
class U:
    V: str


@dataclass
class Seven:
    a: int
    b: str


T: dict[str, Any] = {
    "True": True,
    "I": 17,
    "U16": 16,
    "X": "x",
    "S": "xyz",
    "FloatZero": 0.0,
    "U": U("v"),
    "SI": [3, 4, 5],
    "AI": (3, 4, 5),
    "SIEmpty": [],
    "SB": [True, False],
    "MSI": {"one": 1, "two": 2, "three": 3},
    "MSIone": {"one": 1},
    "MSIEmpty": {},
    "MXI": {"one": 1},
    "MII": {1: 1},
    "MI32S": {1: "one", 2: "two"},
    "MI64S": {2: "i642", 3: "i643"},
    "MUI64S": {2: "ui642", 3: "ui643"},
    "MI8S": {2: "i82", 3: "i83"},
    "MUI8S": {2: "u82", 3: "u83"},
    "SMSI": [{"one": 1, "two": 2}, {"eleven": 11, "twelve": 12}],
    "Empty0": None,
    "Empty1": 3,
    "Empty2": "empty2",
    "Empty3": [7, 8],
    "Empty4": U("UinEmpty"),
    "PI": 23,
    "PS": "a string",
    "PSI": [21, 22, 23],
}


def _die() -> bool:
    raise RuntimeError("die")


def _makemap(*args: str) -> dict[str, str]:
    return dict(zip(args[::2], args[1::2], strict=True))


FUNCS = {
    "add": lambda *args: sum(args),
    "die": _die,
    "echo": lambda arg: arg,
    "makemap": _makemap,
    "mapOfThree": lambda: {"three": 3},
    "oneArg": lambda a: "oneArg=" + a,
    "twoArgs": lambda a, b: "twoArgs=" + a + b,
    "typeOf": lambda arg: Template.parse('{{printf "%T" .}}').render(arg),
    "zeroArgs": lambda: "zeroArgs",
}

RANGE_INT = "int0int1int2int3int4"

EXEC_TESTS: list[tuple[str, str, str, Any, bool]] = [
    # Trivial cases.
    ("empty", "", "", None, True),
    ("text", "some text", "some text", None, True),
    ("nil action", "{{nil}}", "", None, False),
    # Ideal constants.
    ("ideal int", "{{typeOf 3}}", "int", 0, True),
    ("ideal float", "{{typeOf 1.0}}", "float64", 0, True),
    ("ideal exp float", "{{typeOf 1e1}}", "float64", 0, True),
    ("ideal nil without type", "{{nil}}", "", 0, False),
    # Fields of structs.
    (".X", "-{{.X}}-", "-x-", T, True),
    (".U.V", "-{{.U.V}}-", "-v-", T, True),
    # Fields on maps.
    ("map .one", "{{.MSI.one}}", "1", T, True),
    ("map .two", "{{.MSI.two}}", "2", T, True),
    ("map .NO", "{{.MSI.NO}}", "<no value>", T, True),
    ("map .one interface", "{{.MXI.one}}", "1", T, True),
    ("map .WRONG args", "{{.MSI.one 1}}", "", T, False),
    # Dots of all kinds to test basic evaluation.
    ("dot int", "<{{.}}>", "<13>", 13, True),
    ("dot float", "<{{.}}>", "<15.1>", 15.1, True),
    ("dot bool", "<{{.}}>", "<true>", True, True),
    ("dot string", "<{{.}}>", "<hello>", "hello", True),
    ("dot slice", "<{{.}}>", "<[-1 -2 -3]>", [-1, -2, -3], True),
    ("dot map", "<{{.}}>", "<map[two:22]>", {"two": 22}, True),
    ("dot struct", "<{{.}}>", "<{7 seven}>", Seven(7, "seven"), True),
    # Variables.
    ("$ int", "{{$}}", "123", 123, True),
    ("$.I", "{{$.I}}", "17", T, True),
    ("$.U.V", "{{$.U.V}}", "v", T, True),
    ("declare in action", "{{$x := $.U.V}}{{$x}}", "v", T, True),
    # Pointers (their values here).
    ("*int", "{{.PI}}", "23", T, True),
    ("*string", "{{.PS}}", "a string", T, True),
    ("*[]int", "{{.PSI}}", "[21 22 23]", T, True),
    ("*[]int[1]", "{{index .PSI 1}}", "22", T, True),
    # Empty interfaces holding values.
    ("empty nil", "{{.Empty0}}", "<no value>", T, True),
    ("empty with int", "{{.Empty1}}", "3", T, True),
    ("empty with string", "{{.Empty2}}", "empty2", T, True),
    ("empty with slice", "{{.Empty3}}", "[7 8]", T, True),
    ("empty with struct", "{{.Empty4}}", "{UinEmpty}", T, True),
    ("empty with struct, field", "{{.Empty4.V}}", "UinEmpty", T, True),
    # Edge cases with <no value> with an interface value.
    ("field on interface", "{{.foo}}", "<no value>", None, True),
    ("field on parenthesized interface", "{{(.).foo}}", "<no value>", None, True),
    # Issue 31810: parenthesized first element of pipeline with arguments.
    ("unparenthesized non-function", "{{1 2}}", "", None, False),
    ("parenthesized non-function", "{{(1) 2}}", "", None, False),
    ("parenthesized non-function with no args", "{{(1)}}", "1", None, True),
    # Parenthesized expressions.
    (
        "parens in pipeline",
        "{{printf `%d %d %d` (1) (2 | add 3) (add 4 (add 5 6))}}",
        "1 5 15",
        T,
        True,
    ),
    ("parens: $ in paren", "{{($).X}}", "x", T, True),
    ("parens: $ in paren in pipe", "{{($ | echo).X}}", "x", T, True),
    ("parens: spaces and args", '{{(makemap "up" "down" "left" "right").left}}', "right", T, True),
    # If.
    ("if true", "{{if true}}TRUE{{end}}", "TRUE", T, True),
    ("if false", "{{if false}}TRUE{{else}}FALSE{{end}}", "FALSE", T, True),
    ("if nil", "{{if nil}}TRUE{{end}}", "", T, False),
    ("if 1", "{{if 1}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", T, True),
    ("if 0", "{{if 0}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", T, True),
    ("if 1.5", "{{if 1.5}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", T, True),
    ("if 0.0", "{{if .FloatZero}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", T, True),
    ("if emptystring", "{{if ``}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("if string", "{{if `notempty`}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", T, True),
    ("if emptyslice", "{{if .SIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("if slice", "{{if .SI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", T, True),
    ("if emptymap", "{{if .MSIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("if map", "{{if .MSI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", T, True),
    ("if map unset", "{{if .MXI.none}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", T, True),
    ("if map not unset", "{{if not .MXI.none}}ZERO{{else}}NON-ZERO{{end}}", "ZERO", T, True),
    (
        "if $x with $y int",
        "{{if $x := true}}{{with $y := .I}}{{$x}},{{$y}}{{end}}{{end}}",
        "true,17",
        T,
        True,
    ),
    (
        "if $x with $x int",
        "{{if $x := true}}{{with $x := .I}}{{$x}},{{end}}{{$x}}{{end}}",
        "17,true",
        T,
        True,
    ),
    ("if else if", "{{if false}}FALSE{{else if true}}TRUE{{end}}", "TRUE", T, True),
    ("if else chain", "{{if eq 1 3}}1{{else if eq 2 3}}2{{else if eq 3 3}}3{{end}}", "3", T, True),
    # Print etc.
    ("print", '{{print "hello, print"}}', "hello, print", T, True),
    ("print 123", "{{print 1 2 3}}", "1 2 3", T, True),
    ("print nil", "{{print nil}}", "<nil>", T, True),
    ("println", "{{println 1 2 3}}", "1 2 3\n", T, True),
    ("printf int", '{{printf "%04x" 127}}', "007f", T, True),
    ("printf float", '{{printf "%g" 3.5}}', "3.5", T, True),
    ("printf string", '{{printf "%s" "hello"}}', "hello", T, True),
    ("printf function", '{{printf "%#q" zeroArgs}}', "`zeroArgs`", T, True),
    ("printf field", '{{printf "%s" .U.V}}', "v", T, True),
    ("printf dot", '{{with .I}}{{printf "%d" .}}{{end}}', "17", T, True),
    ("printf var", '{{with $x := .I}}{{printf "%d" $x}}{{end}}', "17", T, True),
    # Booleans.
    ("not", "{{not true}} {{not false}}", "false true", None, True),
    ("and", "{{and false 0}} {{and 1 0}} {{and 0 true}} {{and 1 1}}", "false 0 0 1", None, True),
    ("or", "{{or 0 0}} {{or 1 0}} {{or 0 true}} {{or 1 1}}", "0 1 true 1", None, True),
    ("or short-circuit", "{{or 0 1 (die)}}", "1", None, True),
    ("and short-circuit", "{{and 1 0 (die)}}", "0", None, True),
    ("or short-circuit2", "{{or 0 0 (die)}}", "", None, False),
    ("and short-circuit2", "{{and 1 1 (die)}}", "", None, False),
    ("and pipe-true", "{{1 | and 1}}", "1", None, True),
    ("and pipe-false", "{{0 | and 1}}", "0", None, True),
    ("or pipe-true", "{{1 | or 0}}", "1", None, True),
    ("or pipe-false", "{{0 | or 0}}", "0", None, True),
    ("and undef", "{{and 1 .Unknown}}", "<no value>", None, True),
    ("or undef", "{{or 0 .Unknown}}", "<no value>", None, True),
    ("boolean if", "{{if and true 1 `hi`}}TRUE{{else}}FALSE{{end}}", "TRUE", T, True),
    ("boolean if not", "{{if and true 1 `hi` | not}}TRUE{{else}}FALSE{{end}}", "FALSE", None, True),
    ("boolean if pipe", "{{if true | not | and 1}}TRUE{{else}}FALSE{{end}}", "FALSE", None, True),
    # Indexing.
    ("slice[0]", "{{index .SI 0}}", "3", T, True),
    ("slice[1]", "{{index .SI 1}}", "4", T, True),
    ("slice[HUGE]", "{{index .SI 10}}", "", T, False),
    ("slice[WRONG]", "{{index .SI `hello`}}", "", T, False),
    ("slice[nil]", "{{index .SI nil}}", "", T, False),
    ("map[one]", "{{index .MSI `one`}}", "1", T, True),
    ("map[two]", "{{index .MSI `two`}}", "2", T, True),
    ("double index", "{{index .SMSI 1 `eleven`}}", "11", T, True),
    ("nil[1]", "{{index nil 1}}", "", T, False),
    ("map MI64S", "{{index .MI64S 2}}", "i642", T, True),
    ("map MI32S", "{{index .MI32S 2}}", "two", T, True),
    ("map MUI64S", "{{index .MUI64S 3}}", "ui643", T, True),
    ("map MI8S", "{{index .MI8S 3}}", "i83", T, True),
    ("map MUI8S", "{{index .MUI8S 2}}", "u82", T, True),
    ("index of an interface field", "{{index .Empty3 0}}", "7", T, True),
    # Slicing.
    ("slice[:]", "{{slice .SI}}", "[3 4 5]", T, True),
    ("slice[1:]", "{{slice .SI 1}}", "[4 5]", T, True),
    ("slice[1:2]", "{{slice .SI 1 2}}", "[4]", T, True),
    ("slice[-1:]", "{{slice .SI -1}}", "", T, False),
    ("slice[1:-2]", "{{slice .SI 1 -2}}", "", T, False),
    ("slice[1:2:-1]", "{{slice .SI 1 2 -1}}", "", T, False),
    ("slice[2:1]", "{{slice .SI 2 1}}", "", T, False),
    ("slice[2:2:1]", "{{slice .SI 2 2 1}}", "", T, False),
    ("out of range", "{{slice .SI 4 5}}", "", T, False),
    ("out of range", "{{slice .SI 2 2 5}}", "", T, False),
    ("array[:]", "{{slice .AI}}", "[3 4 5]", T, True),
    ("array[1:]", "{{slice .AI 1}}", "[4 5]", T, True),
    ("array[1:2]", "{{slice .AI 1 2}}", "[4]", T, True),
    ("string[:]", "{{slice .S}}", "xyz", T, True),
    ("string[0:1]", "{{slice .S 0 1}}", "x", T, True),
    ("string[1:]", "{{slice .S 1}}", "yz", T, True),
    ("string[1:2]", "{{slice .S 1 2}}", "y", T, True),
    ("out of range", "{{slice .S 1 5}}", "", T, False),
    ("3-index slice of string", "{{slice .S 1 2 2}}", "", T, False),
    ("slice of an interface field", "{{slice .Empty3 0 1}}", "[7]", T, True),
    # Len.
    ("slice", "{{len .SI}}", "3", T, True),
    ("map", "{{len .MSI }}", "3", T, True),
    ("len of int", "{{len 3}}", "", T, False),
    ("len of nothing", "{{len .Empty0}}", "", T, False),
    ("len of an interface field", "{{len .Empty3}}", "2", T, True),
    # With.
    ("with true", "{{with true}}{{.}}{{end}}", "true", T, True),
    ("with false", "{{with false}}{{.}}{{else}}FALSE{{end}}", "FALSE", T, True),
    ("with 1", "{{with 1}}{{.}}{{else}}ZERO{{end}}", "1", T, True),
    ("with 0", "{{with 0}}{{.}}{{else}}ZERO{{end}}", "ZERO", T, True),
    ("with 1.5", "{{with 1.5}}{{.}}{{else}}ZERO{{end}}", "1.5", T, True),
    ("with 0.0", "{{with .FloatZero}}{{.}}{{else}}ZERO{{end}}", "ZERO", T, True),
    ("with emptystring", "{{with ``}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("with string", "{{with `notempty`}}{{.}}{{else}}EMPTY{{end}}", "notempty", T, True),
    ("with emptyslice", "{{with .SIEmpty}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("with slice", "{{with .SI}}{{.}}{{else}}EMPTY{{end}}", "[3 4 5]", T, True),
    ("with emptymap", "{{with .MSIEmpty}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("with map", "{{with .MSIone}}{{.}}{{else}}EMPTY{{end}}", "map[one:1]", T, True),
    ("with empty interface, struct field", "{{with .Empty4}}{{.V}}{{end}}", "UinEmpty", T, True),
    ("with $x int", "{{with $x := .I}}{{$x}}{{end}}", "17", T, True),
    ("with $x struct.U.V", "{{with $x := $}}{{$x.U.V}}{{end}}", "v", T, True),
    ("with variable and action", "{{with $x := $}}{{$y := $.U.V}}{{$y}}{{end}}", "v", T, True),
    ("with else with", "{{with 0}}{{.}}{{else with true}}{{.}}{{end}}", "true", T, True),
    (
        "with else with chain",
        "{{with 0}}{{.}}{{else with false}}{{.}}{{else with `notempty`}}{{.}}{{end}}",
        "notempty",
        T,
        True,
    ),
    # Range.
    ("range []int", "{{range .SI}}-{{.}}-{{end}}", "-3--4--5-", T, True),
    ("range empty no else", "{{range .SIEmpty}}-{{.}}-{{end}}", "", T, True),
    ("range []int else", "{{range .SI}}-{{.}}-{{else}}EMPTY{{end}}", "-3--4--5-", T, True),
    ("range empty else", "{{range .SIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY", T, True),
    (
        "range []int break else",
        "{{range .SI}}-{{.}}-{{break}}NOTREACHED{{else}}EMPTY{{end}}",
        "-3-",
        T,
        True,
    ),
    (
        "range []int continue else",
        "{{range .SI}}-{{.}}-{{continue}}NOTREACHED{{else}}EMPTY{{end}}",
        "-3--4--5-",
        T,
        True,
    ),
    ("range []bool", "{{range .SB}}-{{.}}-{{end}}", "-true--false-", T, True),
    ("range map", "{{range .MSI}}-{{.}}-{{end}}", "-1--3--2-", T, True),
    ("range empty map no else", "{{range .MSIEmpty}}-{{.}}-{{end}}", "", T, True),
    ("range map else", "{{range .MSI}}-{{.}}-{{else}}EMPTY{{end}}", "-1--3--2-", T, True),
    ("range empty map else", "{{range .MSIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY", T, True),
    ("range empty interface", "{{range .Empty3}}-{{.}}-{{else}}EMPTY{{end}}", "-7--8-", T, True),
    ("range empty nil", "{{range .Empty0}}-{{.}}-{{end}}", "", T, True),
    ("range $x SI", "{{range $x := .SI}}<{{$x}}>{{end}}", "<3><4><5>", T, True),
    ("range $x $y SI", "{{range $x, $y := .SI}}<{{$x}}={{$y}}>{{end}}", "<0=3><1=4><2=5>", T, True),
    ("range $x MSIone", "{{range $x := .MSIone}}<{{$x}}>{{end}}", "<1>", T, True),
    ("range $x $y MSIone", "{{range $x, $y := .MSIone}}<{{$x}}={{$y}}>{{end}}", "<one=1>", T, True),
    ("range $x PSI", "{{range $x := .PSI}}<{{$x}}>{{end}}", "<21><22><23>", T, True),
    (
        "declare in range",
        "{{range $x := .PSI}}<{{$foo:=$x}}{{$x}}>{{end}}",
        "<21><22><23>",
        T,
        True,
    ),
    ("range int", '{{range $v := .}}{{printf "%T%d" $v $v}}{{end}}', RANGE_INT, 5, True),
    ("range uintptr(0)", "{{range $v := .}}{{print $v}}{{else}}empty{{end}}", "empty", 0, True),
    ("range 5", '{{range $v := 5}}{{printf "%T%d" $v $v}}{{end}}', RANGE_INT, None, True),
    # Cute examples.
    ("or as if true", '{{or .SI "slice is empty"}}', "[3 4 5]", T, True),
    ("or as if false", '{{or .SIEmpty "slice is empty"}}', "slice is empty", T, True),
    # Numbers.
    ("decimal", "{{print 1234}}", "1234", T, True),
    ("decimal _", "{{print 12_34}}", "1234", T, True),
    ("binary", "{{print 0b101}}", "5", T, True),
    ("binary _", "{{print 0b_1_0_1}}", "5", T, True),
    ("BINARY", "{{print 0B101}}", "5", T, True),
    ("octal0", "{{print 0377}}", "255", T, True),
    ("octal", "{{print 0o377}}", "255", T, True),
    ("octal _", "{{print 0o_3_7_7}}", "255", T, True),
    ("OCTAL", "{{print 0O377}}", "255", T, True),
    ("hex", "{{print 0x123}}", "291", T, True),
    ("hex _", "{{print 0x1_23}}", "291", T, True),
    ("HEX", "{{print 0X123ABC}}", "1194684", T, True),
    ("float", "{{print 123.4}}", "123.4", T, True),
    ("float _", "{{print 0_0_1_2_3.4}}", "123.4", T, True),
    ("hex float", "{{print +0x1.ep+2}}", "7.5", T, True),
    ("hex float _", "{{print +0x_1.e_0p+0_2}}", "7.5", T, True),
    ("HEX float", "{{print +0X1.EP+2}}", "7.5", T, True),
    ("print multi", "{{print 1_2_3_4 7.5_00_00_00}}", "1234 7.5", T, True),
    ("print multi2", "{{print 1234 0x0_1.e_0p+02}}", "1234 7.5", T, True),
    # Fixed bugs.
    ("bug3", "{{with $}}{{.X}}{{end}}", "x", T, True),
    ("bug4", "{{if .Empty0}}non-nil{{else}}nil{{end}}", "nil", T, True),
    ("bug7a", "{{3 2}}", "", T, False),
    ("bug7b", "{{$x := 1}}{{$x 2}}", "", T, False),
    ("bug7c", "{{$x := 1}}{{3 | $x}}", "", T, False),
    ("bug9", "{{.cause}}", "neglect", {"cause": "neglect"}, True),
    ("bug10", "{{mapOfThree.three}}-{{(mapOfThree).three}}", "3-3", 0, True),
    ("bug12xe", "{{printf `%T` 0xef}}", "int", T, True),
    ("bug12xE", "{{printf `%T` 0xEE}}", "int", T, True),
    ("bug12Xe", "{{printf `%T` 0Xef}}", "int", T, True),
    ("bug12XE", "{{printf `%T` 0XEE}}", "int", T, True),
    ("bug14a", "{{(nil).True}}", "", T, False),
    ("bug14b", "{{$x := nil}}{{$x.anything}}", "", T, False),
    ("bug14c", '{{$x := (1.0)}}{{$y := ("hello")}}{{$x.anything}}{{$y.true}}', "", T, False),
    ("bug16a", "{{true|printf}}", "", T, False),
    ("bug16b", "{{1|printf}}", "", T, False),
    ("bug16c", "{{1.1|printf}}", "", T, False),
    ("bug16d", "{{'x'|printf}}", "", T, False),
    ("bug16g", '{{"aaa" |twoArgs "bbb"}}', "twoArgs=bbbaaa", T, True),
    ("bug16i", '{{"aaa"|oneArg}}', "oneArg=aaa", T, True),
    ("bug16k", '{{"aaa"|printf }}', "aaa", T, True),
    ("bug18a", "{{eq . '.'}}", "true", ord("."), True),
    ("bug18b", "{{eq . 'e'}}", "true", ord("e"), True),
    ("bug18c", "{{eq . 'P'}}", "true", ord("P"), True),
    ("issue56490", "{{$i := 0}}{{$x := 0}}{{range $i = .AI}}{{end}}{{$i}}", "5", T, True),
    (
        "issue60801",
        "{{$k := 0}}{{$v := 0}}{{range $k, $v = .AI}}{{$k}}={{$v}} {{end}}",
        "0=3 1=4 2=5 ",
        T,
        True,
    ),
    # Trim markers (text/template's documentation and parse tests).
    ("trim", "{{23 -}} < {{- 45}}", "23<45", None, True),
    ("trim newlines", "a \n\t{{- 1 -}}\n\t b", "a1b", None, True),
    ("trim comment", "x {{- /* comment */ -}} y", "xy", None, True),
    ("no trim", "{{23}} < {{45}}", "23 < 45", None, True),
]


@pytest.mark.parametrize(
    ("name", "text", "output", "data", "ok"), EXEC_TESTS, ids=[case[0] for case in EXEC_TESTS]
)
def test_go_exec_cases(name: str, text: str, output: str, data: Any, ok: bool) -> None:
    if not ok:
        with pytest.raises(TemplateError):
            Template.parse(text, name, funcs=FUNCS).render(data)
        return
    assert Template.parse(text, name, funcs=FUNCS).render(data) == output


CMP = {"Uthree": 3, "Ufour": 4, "NegOne": -1, "Three": 3, "NilIface": None, "Map": {1: 1}}

CMP_TESTS: list[tuple[str, str, bool]] = [
    ("eq true true", "true", True),
    ("eq true false", "false", True),
    ("eq 1.5 1.5", "true", True),
    ("eq 1.5 2.5", "false", True),
    ("eq 1 1", "true", True),
    ("eq 1 2", "false", True),
    ("eq `xy` `xy`", "true", True),
    ("eq `xy` `xyz`", "false", True),
    ("eq .Uthree .Uthree", "true", True),
    ("eq .Uthree .Ufour", "false", True),
    ("eq 3 4 5 6 3", "true", True),
    ("eq 3 4 5 6 7", "false", True),
    ("ne true true", "false", True),
    ("ne true false", "true", True),
    ("ne 1.5 1.5", "false", True),
    ("ne 1.5 2.5", "true", True),
    ("ne 1 1", "false", True),
    ("ne 1 2", "true", True),
    ("ne `xy` `xy`", "false", True),
    ("ne `xy` `xyz`", "true", True),
    ("ne .Uthree .Uthree", "false", True),
    ("ne .Uthree .Ufour", "true", True),
    ("lt 1.5 1.5", "false", True),
    ("lt 1.5 2.5", "true", True),
    ("lt 1 1", "false", True),
    ("lt 1 2", "true", True),
    ("lt `xy` `xy`", "false", True),
    ("lt `xy` `xyz`", "true", True),
    ("lt .Uthree .Uthree", "false", True),
    ("lt .Uthree .Ufour", "true", True),
    ("le 1.5 1.5", "true", True),
    ("le 1.5 2.5", "true", True),
    ("le 2.5 1.5", "false", True),
    ("le 1 1", "true", True),
    ("le 1 2", "true", True),
    ("le 2 1", "false", True),
    ("le `xy` `xy`", "true", True),
    ("le `xy` `xyz`", "true", True),
    ("le `xyz` `xy`", "false", True),
    ("le .Uthree .Uthree", "true", True),
    ("le .Uthree .Ufour", "true", True),
    ("le .Ufour .Uthree", "false", True),
    ("gt 1.5 1.5", "false", True),
    ("gt 1.5 2.5", "false", True),
    ("gt 1 1", "false", True),
    ("gt 2 1", "true", True),
    ("gt 1 2", "false", True),
    ("gt `xy` `xy`", "false", True),
    ("gt `xy` `xyz`", "false", True),
    ("gt .Uthree .Uthree", "false", True),
    ("gt .Uthree .Ufour", "false", True),
    ("gt .Ufour .Uthree", "true", True),
    ("ge 1.5 1.5", "true", True),
    ("ge 1.5 2.5", "false", True),
    ("ge 2.5 1.5", "true", True),
    ("ge 1 1", "true", True),
    ("ge 1 2", "false", True),
    ("ge 2 1", "true", True),
    ("ge `xy` `xy`", "true", True),
    ("ge `xy` `xyz`", "false", True),
    ("ge `xyz` `xy`", "true", True),
    ("ge .Uthree .Uthree", "true", True),
    ("ge .Uthree .Ufour", "false", True),
    ("ge .Ufour .Uthree", "true", True),
    ("eq .Uthree .Three", "true", True),
    ("eq .Three .Uthree", "true", True),
    ("le .Uthree .Three", "true", True),
    ("ge .Three .Uthree", "true", True),
    ("lt .Uthree .Three", "false", True),
    ("gt .Three .Uthree", "false", True),
    ("eq .Ufour .Three", "false", True),
    ("lt .Ufour .Three", "false", True),
    ("gt .Ufour .Three", "true", True),
    ("eq .NegOne .Uthree", "false", True),
    ("ne .NegOne .Uthree", "true", True),
    ("lt .NegOne .Uthree", "true", True),
    ("le .Uthree .NegOne", "false", True),
    ("gt .Uthree .NegOne", "true", True),
    ("ge .NegOne .Uthree", "false", True),
    ("eq (index `x` 0) 'x'", "true", True),
    ("eq (index `x` 0) 'y'", "false", True),
    ("eq .NilIface .NilIface", "true", True),
    ("eq .NilIface 0", "false", True),
    ("eq 0 .NilIface", "false", True),
    # Errors.
    ("eq `xy` 1", "", False),
    ("eq 2 2.0", "", False),
    ("lt true true", "", False),
    ("eq .Map .Map", "", False),
]


@pytest.mark.parametrize(("expr", "truth", "ok"), CMP_TESTS, ids=[c[0] for c in CMP_TESTS])
def test_go_comparison_cases(expr: str, truth: str, ok: bool) -> None:
    tmpl = Template.parse(f"{{{{if {expr}}}}}true{{{{else}}}}false{{{{end}}}}", "empty")
    if not ok:
        with pytest.raises(TemplateError):
            tmpl.render(CMP)
        return
    assert tmpl.render(CMP) == truth


def test_go_exec_error_names_the_innermost_template() -> None:
    text = (
        'line 1\nline 2\nline 3\n{{template "one" .}}\n{{define "one"}}{{template "two" .}}{{end}}'
        '\n{{define "two"}}{{template "three" .}}{{end}}\n{{define "three"}}{{index "hi" $}}{{end}}'
    )
    with pytest.raises(TemplateError) as caught:
        Template.parse(text, "top", templates={}).render(5)
    assert str(caught.value) == (
        'template: top:7:20: executing "three" at <index "hi" $>: '
        "error calling index: index out of range: 5"
    )


def test_go_max_exec_depth() -> None:
    tmpl = Template.parse('{{template "tmpl" .}}', "tmpl", templates={})
    tmpl.templates["tmpl"] = tmpl  # type: ignore[index]
    with pytest.raises(TemplateError, match="exceeded maximum template depth"):
        tmpl.render(None)


@dataclass
class Tree:
    Val: int
    Left: Tree | None = None
    Right: Tree | None = None


def test_go_tree_walk_with_trim_markers() -> None:
    text = """
    {{- define "tree" -}}
    [
        {{- .Val -}}
        {{- with .Left -}}
            {{template "tree" . -}}
        {{- end -}}
        {{- with .Right -}}
            {{- template "tree" . -}}
        {{- end -}}
    ]
    {{- end -}}
"""
    tree = Tree(
        1,
        Tree(2, Tree(3, Tree(4)), Tree(5, Tree(6))),
        Tree(7, Tree(8, Tree(9)), Tree(10, Tree(11))),
    )
    templates: dict[str, Template] = {}
    Template.parse(text, "root", templates=templates)
    assert templates["tree"].render(tree) == "[1[2[3[4]][5[6]]][7[8[9]][10[11]]]]"
    assert go_sprint(Tree(1)) == "{1 <nil> <nil>}"
