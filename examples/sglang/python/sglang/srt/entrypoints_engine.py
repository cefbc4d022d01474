"""Start-up checks (an excerpt in the shape of sglang/srt/entrypoints/engine.py)."""

from sglang.srt.utils.common import assert_pkg_version


def _check_flashinfer(server_args) -> None:
    if server_args.attention_backend == "flashinfer":
        assert_pkg_version(
            "flashinfer_python",
            "0.6.8.post1",
            "Please uninstall the old version and reinstall the latest version by "
            "following the instructions at https://docs.flashinfer.ai/installation.html.",
        )
