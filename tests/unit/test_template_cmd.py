from pathlib import Path

from click.testing import CliRunner

from argocd_image_updater.cli.main import cli

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
