from pathlib import Path

from click.testing import CliRunner

from argocd_image_updater import __version__
from argocd_image_updater.cli.main import cli
from argocd_image_updater.model.platform import runtime_platform

DEFAULT_OUTPUT = """build: automatic update of example-app

updates image example/example tag '1.0.0' to '1.0.1'
updates image example/updater tag 'sha256:01d09d19c2139a46aebfb577780d123d7396e97201bc7ead210a2ebff8239dee' to 'sha256:7aa7a5359173d05b63cfd682e3c38487f3cb4f7f1d60659fe59fab1505977d4c'

"""


def test_default_template_output_is_the_originals() -> None:
    result = CliRunner().invoke(cli, ["template"])
    assert result.exit_code == 0
    assert result.output == DEFAULT_OUTPUT


def test_custom_and_broken_templates(tmp_path: Path) -> None:
    good = tmp_path / "good.tpl"
    good.write_text("chore: {{ .AppName }}{{ range .AppChanges }} {{ .NewTag }}{{ end }}")
    result = CliRunner().invoke(cli, ["template", str(good)])
    assert result.exit_code == 0
    assert result.output.startswith("chore: example-app 1.0.1 sha256:7aa7")
    bad = tmp_path / "bad.tpl"
    bad.write_text("{{ .AppName ")
    result = CliRunner().invoke(cli, ["template", str(bad)])
    assert result.exit_code == 1
    assert "unclosed action" in result.output


def test_unreadable_template_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.tpl"
    result = CliRunner().invoke(cli, ["template", str(missing)])
    assert result.exit_code == 1
    assert f"could not read commit message template {missing}: No such file" in result.output


def test_template_failing_at_execution_falls_back_like_a_cycle(tmp_path: Path) -> None:
    bad = tmp_path / "exec.tpl"
    bad.write_text("{{ .AppName }} {{ range .AppChanges }}{{ .NoSuchField }}{{ end }}")
    result = CliRunner().invoke(cli, ["template", str(bad)])
    assert result.exit_code == 0
    assert result.output == "build: update of application example-app\n"


def test_version_long_and_short() -> None:
    short = CliRunner().invoke(cli, ["version", "--short"])
    assert short.exit_code == 0
    assert short.output == f"v{__version__}\n"
    long = CliRunner().invoke(cli, ["version"])
    assert long.exit_code == 0
    lines = long.output.splitlines()
    assert lines[0] == f"argocd-image-updater: v{__version__}"
    platform_line = next(line for line in lines if line.startswith("  Platform: "))
    assert platform_line == f"  Platform: {runtime_platform()}"  # Go names: linux/amd64
    assert "x86_64" not in platform_line and "aarch64" not in platform_line
