"""App parameters: ``floem.param`` in the app, ``-D name=value`` on every subcommand,
``floem.defaults`` (how ``floem place`` writes the values it chose), ``floem params``."""
from __future__ import annotations

import os
import re

import pytest

from conftest import floem

APP = '''
from floem import main, param
design = param("design", "cpu", choices=["cpu", "split", "cache-wb"], help="the offload design")
cores = param("cores", 1, help="host threads")
share = param("share_queues", True, help="GET and SET share physical queues")
ratio = param("ratio", 0.5)
name = param("label", "kvs")
main('printf("%s %d %d %g %s\\\\n");' % (design, cores, share, ratio, name))
'''


@pytest.fixture
def app(tmp_path) -> str:
    path = tmp_path / "app.py"
    path.write_text(APP)
    return str(path)


def line_of(name: str) -> int:
    """The app line declaring parameter ``name``."""
    return next(i for i, line in enumerate(APP.splitlines(), 1) if f'param("{name}"' in line)


def run(app: str, *defines: str) -> str:
    result = floem("run", "--timeout", "30", app, *[a for d in defines for a in ("-D", d)])
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_defaults_without_definitions(app: str) -> None:
    assert run(app) == "cpu 1 1 0.5 kvs\n"


def test_values_are_typed_like_the_default(app: str) -> None:
    assert run(app, "design=split", "cores=0x10", "share_queues=OFF", "ratio=1e-3",
               "label=a=b") == "split 16 0 0.001 a=b\n"
    assert run(app, "cores=12", "share_queues=yes") == "cpu 12 1 0.5 kvs\n"


@pytest.mark.parametrize("define, message, where", [
    ("design=gpu", "-D design=gpu: not one of cpu, split, cache-wb", "design"),
    ("cores=many", "-D cores=many: not an integer", "cores"),
    ("share_queues=maybe", "-D share_queues=maybe: not true or false", "share_queues"),
    ("ratio=half", "-D ratio=half: not a number", "ratio"),
])
def test_bad_values_are_located_errors_listing_every_parameter(app: str, define: str,
                                                               message: str, where: str) -> None:
    for command in ("run", "build", "check", "graph", "params"):
        result = floem(command, app, "-D", define)
        assert result.returncode == 1
        assert f"{app}:{line_of(where)}: error: {message}" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        # the listing names all five parameters, also those declared after the bad one
        for name in ("design=cpu (cpu, split, cache-wb): str, the offload design",
                     "cores=1: int, host threads", "ratio=0.5: float", "label=kvs: str"):
            assert name in result.stderr


def test_unknown_names_are_errors_listing_the_parameters(app: str) -> None:
    result = floem("check", app, "-D", "bogus=1", "-D", "design=split", "-D", "x=2")
    assert result.returncode == 1
    assert f"{app}: error: -D bogus, x: no such parameters" in result.stderr
    assert "share_queues=true: bool, GET and SET share physical queues" in result.stderr


def test_a_misspelled_name_gets_a_suggestion(app: str) -> None:
    result = floem("check", app, "-D", "desing=split")
    assert result.returncode == 1
    assert f"{app}: error: -D desing: no such parameter (did you mean design?)" in result.stderr


def test_a_parameter_given_twice_is_an_error(app: str) -> None:
    result = floem("check", app, "-D", "design=split", "-D", "design=cpu")
    assert result.returncode == 1
    assert "-D design is given twice (design=split and design=cpu): give it once" \
        in result.stderr


def test_an_app_without_parameters_rejects_definitions(tmp_path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("from floem import main\nmain('return 0;')\n")
    result = floem("run", str(plain), "-D", "design=cpu")
    assert result.returncode == 1
    assert "-D design: this app declares no parameters" in result.stderr


@pytest.mark.parametrize("define", ["design", "=x", "2x=1"])
def test_malformed_definitions(app: str, define: str) -> None:
    result = floem("run", app, "-D", define)
    assert result.returncode == 2           # a wrong command line
    assert f"floem run: error: argument -D: expected NAME=VALUE, not {define!r}" in result.stderr


def test_floem_params_lists_defaults_values_choices_and_help(app: str) -> None:
    result = floem("params", app, "-D", "cores=4")
    assert result.returncode == 0, result.stderr
    rows = [re.split(r"\s{2,}", line.strip()) for line in result.stdout.splitlines()]
    assert rows[0] == ["name", "type", "value", "default", "choices", "help"]
    assert rows[1] == ["design", "str", "cpu", "cpu", "cpu, split, cache-wb", "the offload design"]
    assert rows[2] == ["cores", "int", "4", "1", "-", "host threads"]
    assert rows[3] == ["share_queues", "bool", "true", "true", "-",
                       "GET and SET share physical queues"]
    assert rows[4] == ["ratio", "float", "0.5", "0.5", "-"]


def test_declaration_mistakes_are_located(tmp_path) -> None:
    for body, message in [
        ('param("x", None)', "param 'x': the default must be an int, float, bool or str"),
        ('param("x", 1, choices=[2, 3])', "param 'x': the default 1 is not one of the choices (2, 3)"),
        ('param("x", 1, choices=["1"])', "choices must be a non-empty list of int values"),
        ('param("a b", 1)', "param: the name must be an identifier, not 'a b'"),
        ('param("x", 1); param("x", 2)', "param 'x' is already declared differently"),
    ]:
        path = tmp_path / "bad.py"
        path.write_text(f"from floem import param\n{body}\n")
        result = floem("check", str(path))
        assert result.returncode == 1
        assert f"{path}:2: error: " in result.stderr and message in result.stderr, result.stderr


def test_defaults_set_before_the_declarations_change_them(tmp_path) -> None:
    placed = tmp_path / "placed.py"
    placed.write_text("import floem\nfloem.defaults(design='split', cores=4, ratio=2)\n" + APP)
    assert run(str(placed)) == "split 4 1 2 kvs\n"
    assert run(str(placed), "cores=2") == "split 2 1 2 kvs\n"       # -D still wins
    rows = [re.split(r"\s{2,}", line.strip())
            for line in floem("params", str(placed)).stdout.splitlines()]
    assert rows[2][:4] == ["cores", "int", "4", "4"]


@pytest.mark.parametrize("call, message", [
    ("floem.defaults(design='gpu')", "defaults: design='gpu': not one of cpu, split, cache-wb"),
    ("floem.defaults(cores='4')", "defaults: cores='4': not an integer, as the parameter "
                                  "declared at"),
    ("floem.defaults(bogus=1)", "defaults: bogus: no such parameter"),
    ("floem.defaults(cores=[4])", "defaults: cores=[4]: a default is an int, float, bool or str"),
])
def test_wrong_defaults_are_errors_at_their_line(tmp_path, call: str, message: str) -> None:
    placed = tmp_path / "placed.py"
    placed.write_text(f"import floem\n{call}\n" + APP)
    result = floem("check", str(placed))
    assert result.returncode == 1
    assert f"{placed}:2: error: {message}" in result.stderr, result.stderr


def test_defaults_after_the_declaration_are_an_error(tmp_path) -> None:
    late = tmp_path / "late.py"
    late.write_text(APP + "import floem\nfloem.defaults(cores=2)\n")
    result = floem("check", str(late))
    assert result.returncode == 1
    assert "defaults: parameter 'cores' is already declared" in result.stderr


def test_the_build_cache_keys_on_the_parameters(app: str, tmp_path) -> None:
    def build(*defines: str) -> str:
        result = floem("build", app, "-o", str(tmp_path / "out"),
                       *[a for d in defines for a in ("-D", d)])
        assert result.returncode == 0, result.stderr
        return "up to date" if "floem: up to date" in result.stdout else "compiled"
    assert build("design=split") == "compiled"
    assert build("design=split") == "up to date"
    assert build("design=cpu") == "compiled"
    # the same values spelled differently are the same build
    assert build("design=cpu", "cores=1", "share_queues=on") == "up to date"
    assert os.path.exists(tmp_path / "out" / "app")


def test_apps_of_two_directories_each_import_their_own_modules(tmp_path) -> None:
    """One process (floem explore's) loads apps from several directories: each app's
    ``import shared`` finds the ``shared.py`` beside it, not the one loaded before."""
    from floem.api import load_app
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        (tmp_path / label / "shared.py").write_text(f"LABEL = {label!r}\n")
        (tmp_path / label / "app.py").write_text(
            "import shared\nfrom floem import main, param\n"
            "param('label', shared.LABEL)\nmain('return 0;')\n")
    seen = [load_app(str(tmp_path / label / "app.py")).params["label"] for label in ("a", "b")]
    assert seen == ["a", "b"]


def test_a_module_beside_the_app_runs_again_with_each_loads_values(tmp_path) -> None:
    """A parameter a helper module declares (examples/kvs/elements.py's ``value_max``,
    which bounds a field) takes each load's ``-D`` value in one process, as the app's own
    parameters do."""
    from floem.api import load_app
    (tmp_path / "helper.py").write_text("from floem import param\nSIZE = param('size', 8)\n")
    (tmp_path / "app.py").write_text(
        "from helper import SIZE\nfrom floem import main, param\n"
        "param('twice', SIZE * 2)\nmain('return 0;')\n")
    app = str(tmp_path / "app.py")
    seen = [load_app(app, given)
            for given in ({"size": "3"}, {"size": "5"}, {})]
    assert [p.params["size"] for p in seen] == [3, 5, 8]
    assert [p.params["twice"] for p in seen] == [6, 10, 16]
