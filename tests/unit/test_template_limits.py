"""Templates are bounded like Go's: printf widths and precisions as Go's ``fmt`` bounds them,
and each expansion capped in output size and execution steps (kits/gotemplate/limits.py), with
the errors reaching the callers that name the field."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.kits.gotemplate import (
    DEFAULT_LIMITS,
    LimitError,
    Limits,
    OutputLimitError,
    StepLimitError,
    Template,
    TemplateError,
)
from argocd_image_updater.kits.gotemplate.limits import MAX_OUTPUT_BYTES, MAX_STEPS
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.plan.jobs import ImageJob, plan_scans
from argocd_image_updater.plan.model import ImageChange, ImageReason, ImageResult, Outcome
from argocd_image_updater.writeback.messages import BranchNameError, branch_name, commit_message

STEPS = f"execution exceeds the limit of {MAX_STEPS} steps"
OUTPUT = f"output exceeds the limit of {MAX_OUTPUT_BYTES} bytes"


def render(text: str, data: Any = None, limits: Limits | None = None) -> str:
    return Template.parse(text, "t").render({} if data is None else data, limits)


# --- printf: widths and precisions read exactly as Go's fmt reads them ----------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # A digit width past 1e6: Go's parsenum gives up and the rest of the format is skipped.
        ('"%0999999999d" 1', "%!(NOVERB)%!(EXTRA int=1)"),
        ('"%.99999999f" 1.5', "%!(NOVERB)%!(EXTRA float64=1.5)"),
        ('"a%099999999dz" 1', "a%!(NOVERB)%!(EXTRA int=1)"),
        # A * argument past ±1e6 (tooLarge) or not an int: the verb is formatted without it.
        ('"%0*d" 999999999 1', "%!(BADWIDTH)1"),
        ('"%*d|" -1000001 1', "%!(BADWIDTH)1|"),
        ('"%*d|" "x" 1', "%!(BADWIDTH)1|"),
        ('"%.*f" 9999999 1.5', "%!(BADPREC)1.500000"),
        ('"%.*d" -1 5', "%!(BADPREC)5"),
        ('"%.*s" true "abc"', "%!(BADPREC)abc"),
        ('"%*d"', "%!(BADWIDTH)%!d(MISSING)"),
        ('"%*d|%-*d|%*d|" 4 7 3 1 -3 2', "   7|1  |2  |"),
        ('"%1000000.0d|" 0', " " * 1_000_000 + "|"),
        # Argument indexes.
        ('"%[2]d %[1]d" 1 2', "2 1"),
        ('"%d %d %[1]d" 1 2', "1 2 1"),
        ('"%[3]d" 1 2', "%!d(BADINDEX)"),
        ('"%[1]2d" 1', "%!d(BADINDEX)"),
        ('"%[1]*d" 3 1', "  1"),
        ('"%[x]d" 1', "%!d(BADINDEX)"),
        # Flags, precision of integers, per-element padding.
        ('"%#08x|%#o|%#o" 255 8 0', "0x000000ff|010|0"),
        ('"%.3d|%.0d|%5.2d|%05.1d" 7 0 3 4', "007||   03|    4"),
        ('"% d|%+d|% d|%+.1f|% .1f" 5 5 -5 1.0 1.0', " 5|+5|-5|+1.0| 1.0"),
        ('"%08.3f|%-8.2f|%+08d" -3.14159 2.5 42', "-003.142|2.50    |+0000042"),
        ('"%6v|%-3v|" .L .L', "[     1     22]|[1   22 ]|"),
        ('"%5t|%5s|%-5q|" true "ab" "c"', ' true|   ab|"c"  |'),
        ('"%." 1', "%!.(int=1)"),
        ('"%%|%5%|%d" 1', "%|%|1"),
    ],
)
def test_printf_reads_widths_and_precisions_as_go(args: str, expected: str) -> None:
    assert render("{{ printf " + args + " }}", {"L": [1, 22]}) == expected


def test_a_huge_printf_width_prints_a_small_go_error_not_a_gigabyte() -> None:
    out = render('{{printf "%0999999999d" 1}}')
    assert out == "%!(NOVERB)%!(EXTRA int=1)"
    assert len(out) < 100


def test_a_precision_go_accepts_but_past_the_output_cap_is_an_output_error() -> None:
    # Go takes seven digits (9,999,999) and builds ten megabytes; the cap stops it first.
    with pytest.raises(OutputLimitError, match=OUTPUT):
        render('{{printf "%.9999999f" 1.0}}')
    with pytest.raises(OutputLimitError, match=OUTPUT):
        render('{{printf "%9999999d" 1}}')
    with pytest.raises(OutputLimitError, match=OUTPUT):
        render('{{printf "%9999999v" .}}', {"L": list(range(1000))})


# --- step and output caps --------------------------------------------------------------------


def test_range_over_a_huge_int_is_stopped_by_the_step_cap() -> None:
    with pytest.raises(StepLimitError) as caught:
        render("{{range 100000000}}x{{end}}")
    assert str(caught.value) == f'template: t: executing "t": {STEPS}'


def test_nested_ranges_over_lists_exceed_the_step_cap() -> None:
    data = {"L": list(range(1000))}
    with pytest.raises(StepLimitError, match=STEPS):
        render("{{range .L}}{{range $.L}}{{end}}{{end}}", data)


def test_recursive_named_templates_are_held_to_the_shared_step_cap() -> None:
    templates: dict[str, Template] = {}
    text = '{{define "a"}}{{range 10}}{{template "b"}}{{end}}{{end}}'
    text += '{{define "b"}}{{range 10}}{{template "c"}}{{end}}{{end}}'
    text += '{{define "c"}}{{range 10000}}{{end}}{{end}}{{template "a"}}'
    with pytest.raises(StepLimitError, match=STEPS):
        Template.parse(text, "t", templates=templates).render({})


def test_the_step_count_is_exact() -> None:
    # The range node, then per iteration one step for the iteration and one for its text.
    assert render("{{range 3}}x{{end}}", limits=Limits(max_steps=7)) == "xxx"
    with pytest.raises(StepLimitError, match="limit of 6 steps"):
        render("{{range 3}}x{{end}}", limits=Limits(max_steps=6))
    # A function call is a step, and its text one more per KiB.
    assert render('{{printf "%02048d" 1}}', limits=Limits(max_steps=4)) == "1".rjust(2048, "0")
    with pytest.raises(StepLimitError):
        render('{{printf "%02048d" 1}}', limits=Limits(max_steps=3))


def test_output_past_the_cap_is_an_output_error() -> None:
    data = {"L": list(range(2000))}
    with pytest.raises(OutputLimitError) as caught:
        render('{{range .L}}{{printf "%01000d" .}}{{end}}', data)
    assert str(caught.value) == f'template: t: executing "t": {OUTPUT}'
    with pytest.raises(OutputLimitError, match="limit of 10 bytes"):
        render("{{.}}", "é" * 6, limits=Limits(max_output=10))  # bytes, not characters
    assert render("{{.}}", "é" * 5, limits=Limits(max_output=10)) == "é" * 5


def test_a_value_doubled_in_a_variable_is_stopped_before_it_is_written() -> None:
    with pytest.raises(OutputLimitError, match=OUTPUT):
        render('{{$x := "ab"}}{{range 40}}{{$x = print $x $x}}{{end}}')
    with pytest.raises(OutputLimitError, match=OUTPUT):
        render('{{$x := printf "%01000000d" 1}}{{$y := print $x $x}}')


def test_a_caller_may_raise_the_limits() -> None:
    text = '{{printf "%01500000d" 1}}'
    with pytest.raises(OutputLimitError):
        render(text)
    assert len(render(text, limits=Limits(max_output=2 << 20))) == 1_500_000
    assert render("{{range 200000}}{{end}}", limits=Limits(max_steps=300_000)) == ""


@pytest.mark.parametrize(
    "text",
    [
        "{{" + "(" * 101 + "1" + ")" * 101 + "}}",
        "{{if 1}}" * 101 + "x" + "{{end}}" * 101,
        "{{range .}}" * 100_000,
    ],
)
def test_nesting_past_the_parse_depth_is_a_parse_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(TemplateError, match="max expression depth exceeded"):
        Template.parse(text, "t")


def test_nesting_up_to_the_parse_depth_parses_and_runs() -> None:
    assert render("{{" + "(" * 100 + "1" + ")" * 100 + "}}") == "1"
    assert render("{{with 1}}" * 100 + "{{.}}" + "{{end}}" * 100) == "1"


def test_limit_errors_are_template_errors_of_distinct_types() -> None:
    assert issubclass(StepLimitError, LimitError) and issubclass(OutputLimitError, LimitError)
    assert issubclass(LimitError, TemplateError)
    assert not issubclass(StepLimitError, OutputLimitError)
    assert Limits(max_output=1 << 20, max_steps=100_000) == DEFAULT_LIMITS


def test_a_large_legitimate_commit_message_fits_the_default_limits() -> None:
    text = (
        "build: automatic update of {{ .AppName }}\n\n{{ range .AppChanges -}}\n"
        "updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n{{ end -}}\n"
    )
    changes = [{"Image": f"i{i}", "OldTag": "1", "NewTag": "2"} for i in range(2000)]
    out = render(text, {"AppName": "a", "AppChanges": changes})
    assert out.count("\n") == 2002


# --- callers name the field ------------------------------------------------------------------


def app(name: str, images: tuple[str, ...] = ()) -> Application:
    return Application.from_object(
        {
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {
                "source": {"repoURL": "https://git.example.com/shop", "path": name},
                "destination": {"namespace": name},
            },
            "status": {"sourceType": "Kustomize", "summary": {"images": list(images)}},
        }
    )


def endpoint_for(registry: str, name: str) -> RegistryEndpoint:
    host = registry or "registry.example.com"
    return RegistryEndpoint(prefix=host, name=host, api_url=f"https://{host}")


def test_an_imageupdater_template_past_a_limit_is_that_images_error_naming_the_field() -> None:
    updater = parse_image_updater(
        {
            "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
            "kind": "ImageUpdater",
            "metadata": {"name": "shop", "namespace": "argocd"},
            "spec": {
                "applicationRefs": [
                    {
                        "namePattern": "shop-*",
                        "images": [
                            {"alias": "loop", "imageName": "r/{{range 100000000}}x{{end}}"},
                            {"alias": "big", "imageName": 'r/{{printf "%.9999999f" 1.0}}'},
                            {
                                "alias": "tgt",
                                "imageName": "r/tgt",
                                "manifestTargets": {
                                    "helm": {"name": '{{printf "%09999999d" 1}}', "tag": "t"}
                                },
                            },
                            {"alias": "ok", "imageName": "r/{{.AppName}}:~1"},
                        ],
                    }
                ]
            },
        }
    )
    (config,) = select_applications(updater, [app("shop-1", ("r/shop-1:1.0",))]).configs
    items = {item.alias: item for item in plan_scans(config, endpoint_for).items}
    loop, big, tgt, ok = (items[alias] for alias in ("loop", "big", "tgt", "ok"))
    where = "ImageUpdater argocd/shop field spec.applicationRefs[0].images"
    for result, field, error in (
        (loop, "[0].imageName", 'template: imageName: executing "imageName": ' + STEPS),
        (big, "[1].imageName", 'template: imageName: executing "imageName": ' + OUTPUT),
        (tgt, "[2].manifestTargets.helm.name", "template: manifestTargets.helm.name: "),
    ):
        assert isinstance(result, ImageResult)
        assert (result.outcome, result.reason) == (Outcome.ERROR, ImageReason.INVALID_CONFIG)
        assert result.message.startswith(f"{where}{field}: {error}")
    assert isinstance(ok, ImageJob) and ok.repository == "r/shop-1"  # the others go on


CHANGES = (
    ImageChange(
        alias="a",
        image=ImageRef.parse("foo/bar:1.0"),
        old_tag="1.0",
        new_tag="1.1",
        new_digest="",
    ),
)


def test_a_commit_message_template_past_a_limit_falls_back_and_logs_the_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    template = Template.parse("{{range 100000000}}{{end}}", "/app/config/commit.template")
    assert commit_message(template, "shop", CHANGES) == "build: update of application shop"
    [record] = [r for r in caplog.records if "Git commit message" in r.getMessage()]
    assert record.getMessage().startswith(
        "could not execute template for Git commit message: template: "
        '/app/config/commit.template: executing "/app/config/commit.template": ' + STEPS
    )


def test_a_branch_template_past_a_limit_is_a_branch_name_error() -> None:
    with pytest.raises(BranchNameError) as caught:
        branch_name("x{{range 100000000}}{{end}}", CHANGES, "shop", "argocd", "abcd1234")
    assert "git branch name could not be created from the template" in str(caught.value)
    assert STEPS in str(caught.value)
