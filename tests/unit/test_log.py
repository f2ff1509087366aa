import io
import json

from argocd_image_updater.observe import log


def test_text_format_is_logfmt_with_fields_and_masks_secrets() -> None:
    out = io.StringIO()
    log.setup("trace", "text", out)
    log.register_secret("s3cr3t-token")
    log.get_logger("t").bind(application="ns/app").info(
        "Setting new image to %s", "nginx:1.2", image_name="nginx", note="token=s3cr3t-token"
    )
    line = out.getvalue().strip()
    assert 'msg="Setting new image to nginx:1.2"' in line
    assert "level=info" in line
    assert "application=ns/app" in line
    assert "image_name=nginx" in line
    assert "s3cr3t-token" not in line
    assert "*****" in line


def test_json_format_and_levels() -> None:
    out = io.StringIO()
    log.setup("warn", "json", out)
    logger = log.get_logger("t")
    logger.info("hidden")
    logger.warning("shown", image_tag="1.0")
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert data["msg"] == "shown" and data["level"] == "warning" and data["image_tag"] == "1.0"
