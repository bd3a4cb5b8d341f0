import subprocess
import sys


def test_cli_without_command_exits_2_with_usage():
    proc = subprocess.run(
        [sys.executable, "-m", "faultbench.cli"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "usage: faultbench" in proc.stderr


def test_the_package_ships_py_typed():
    """PEP 561: type checkers read faultbench's annotations only if `py.typed` is installed."""
    from importlib.resources import files

    assert files("faultbench").joinpath("py.typed").is_file()
