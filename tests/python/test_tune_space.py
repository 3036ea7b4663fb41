"""hympi tune's inputs: MPI control variables (values checked against their type), their environment names per MPI
flavour, and the TOML search space (cross product, requirements, constraints, default, features)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hympi.launch.mpirun as mpirun
from conftest import REPO, tune_params
from hympi.errors import HympiFatal, UsageError
from hympi.launch.cvars import Cvar, check_params, env_name, ignored, ignored_texts, parse_cvars, parse_listing
from hympi.launch.mpirun import LaunchSpec, build_command
from hympi.launch.slurm import build_srun_command
from hympi.tune.space import Configuration, certain_layouts, load_space, parse_space

FIXTURE = REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json"
CVARS = parse_cvars(FIXTURE.read_text())


def space(text: str):
    return parse_space(tomllib.loads(text), CVARS, "Open MPI v4.1.4")


def test_the_listing_parses_with_types_enums_and_nulls():
    listing = parse_listing(FIXTURE.read_text())
    assert listing.library == "Open MPI v4.1.4"
    eager = CVARS["btl_vader_eager_limit"]
    assert (eager.datatype, eager.value, eager.kind) == ("unsigned_long", "4096", "integer")
    assert CVARS["btl_vader_single_copy_mechanism"].enum == ("cma", "emulated", "none")
    assert CVARS["coll_tuned_use_dynamic_rules"].kind == "bool"
    assert CVARS["vprotocol"].value is None  # a string cvar with no value: JSON null
    with pytest.raises(HympiFatal, match="unknown datatype"):
        parse_cvars('{"format": "hympi-mpit", "cvars": [{"name": "x", "datatype": "complex"}]}')
    with pytest.raises(HympiFatal, match="not a hympi-mpit document"):
        parse_cvars('{"cvars": []}')


@pytest.mark.parametrize(("name", "text", "canonical"), [
    ("btl_vader_eager_limit", " 8192", "8192"),
    ("btl_vader_single_copy_mechanism", "CMA", "cma"),
    ("coll_tuned_use_dynamic_rules", "1", "true"),
    ("coll_tuned_use_dynamic_rules", "False", "false"),
    ("coll_tuned_priority", "-1", "-1"),
    ("mpi_leave_pinned", "AUTO", "auto"),
    ("opal_signal", "6,7", "6,7"),
])
def test_values_are_written_as_the_library_reports_them(name: str, text: str, canonical: str):
    assert CVARS[name].canonical(text) == canonical


@pytest.mark.parametrize(("name", "text", "message"), [
    ("btl_vader_eager_limit", "abc", "btl_vader_eager_limit: 'abc' is not an unsigned integer"),
    ("btl_vader_eager_limit", "-1", "outside the range of unsigned_long"),
    ("btl_vader_fbox_max", str(2**32), "outside the range of unsigned"),
    ("btl_vader_single_copy_mechanism", "xpmem", "'xpmem' is not one of cma, emulated, none"),
    ("coll_tuned_use_dynamic_rules", "maybe", "'maybe' is not a boolean"),
    ("coll_tuned_priority", "1.5", "'1.5' is not an integer"),
])
def test_values_outside_the_type_are_refused_naming_them(name: str, text: str, message: str):
    with pytest.raises(UsageError, match=message):
        CVARS[name].canonical(text)


def test_unknown_parameters_are_refused_naming_the_library():
    with pytest.raises(UsageError, match=r"unknown MPI parameter 'x' \(not a control variable of Open MPI v4.1.4\)"):
        check_params([("x", "1")], CVARS, "Open MPI v4.1.4")
    assert check_params([("btl_vader_eager_limit", "08192"), ("coll_tuned_use_dynamic_rules", "yes")], CVARS) == \
        (("btl_vader_eager_limit", "8192"), ("coll_tuned_use_dynamic_rules", "true"))


def test_env_names_per_flavour_never_prefix_twice():
    assert env_name("btl_vader_eager_limit", "openmpi") == "OMPI_MCA_btl_vader_eager_limit"
    assert env_name("OMPI_MCA_btl_vader_eager_limit", "openmpi") == "OMPI_MCA_btl_vader_eager_limit"
    assert env_name("async_progress", "mpich") == "MPIR_CVAR_ASYNC_PROGRESS"
    assert env_name("MPIR_CVAR_ASYNC_PROGRESS", "mpich") == "MPIR_CVAR_ASYNC_PROGRESS"
    with pytest.raises(ValueError, match="unknown MPI flavour"):
        env_name("x", "lam")


def test_build_command_passes_parameters_by_each_launchers_mechanism():
    spec = LaunchSpec("hympi-rb3d", 2, 1, mpi_params=(("btl_vader_eager_limit", "8192"),))
    ompi = build_command(spec, "mpirun", "openmpi")
    assert "OMPI_MCA_btl_vader_eager_limit=8192" in ompi
    assert ompi[ompi.index("OMPI_MCA_btl_vader_eager_limit=8192") - 1] == "-x"
    mpich = build_command(spec, "mpiexec", "mpich")
    at = mpich.index("MPIR_CVAR_BTL_VADER_EAGER_LIMIT")
    assert mpich[at - 1] == "-genv" and mpich[at + 1] == "8192"
    assert not any("OMPI_MCA" in arg for arg in mpich) and not any("MPIR_CVAR" in arg for arg in ompi)
    srun = build_srun_command(spec, "srun")
    env = srun[1:srun.index("srun")]  # env(1) sets them for srun, whose --export=ALL carries them to the ranks
    assert "OMPI_MCA_btl_vader_eager_limit=8192" in env and "MPIR_CVAR_BTL_VADER_EAGER_LIMIT=8192" in env
    # Without parameters nothing MPI-specific is added.
    plain = build_command(LaunchSpec("hympi-rb3d", 2, 1), "mpirun", "openmpi")
    assert not any("OMPI_MCA" in arg for arg in plain)


def test_ignored_parameters_are_those_read_back_otherwise():
    set_params = (("btl_vader_eager_limit", "8192"), ("btl_vader_single_copy_mechanism", "none"),
                  ("coll_tuned_use_dynamic_rules", "true"))
    back = {"btl_vader_eager_limit": "4096", "btl_vader_single_copy_mechanism": "none",
            "coll_tuned_use_dynamic_rules": None}
    assert ignored(set_params, back, CVARS) == ["btl_vader_eager_limit", "coll_tuned_use_dynamic_rules"]
    assert ignored((("coll_tuned_use_dynamic_rules", "true"),), {"coll_tuned_use_dynamic_rules": "1"}, CVARS) == []
    assert ignored((("x", "1000.0"),), {"x": "1000"}) == []  # no cvar at hand: numbers compare as numbers
    assert ignored_texts(set_params[:1], back) == \
        ["btl_vader_eager_limit set 8192, library reports 4096: ignored"]
    assert ignored_texts(set_params, None) == []  # no read-back: nothing is known, nothing is claimed


SPACE = """
[layout]
ranks = [1, 2]
threads = [1]
bind = ["core", "none"]
default = { ranks = 2, threads = 1, bind = "core" }
[mpi.btl_vader_eager_limit]
range = { from = 4096, to = 65536, factor = 4 }
unset = true
[mpi.coll_tuned_use_dynamic_rules]
values = [false, true]
[mpi.coll_tuned_alltoall_algorithm]
values = ["linear", "pairwise"]
requires = { coll_tuned_use_dynamic_rules = true }
[[constraint]]
exclude = { ranks = 1, bind = "none" }
"""


def test_the_space_is_the_constrained_cross_product_with_requirements_unset():
    s = space(SPACE)
    configs = s.configurations()
    # 3 layouts (1x1 none excluded) x 4 eager limits x (dynamic off, or on with 2 algorithms) + the default.
    assert len(configs) == 3 * 4 * 3 + 1
    assert configs[0] == s.default == Configuration(2, 1, "core")
    assert len(set(configs)) == len(configs)
    for c in configs:
        params = c.params()
        assert ("coll_tuned_alltoall_algorithm" in params) == (params.get("coll_tuned_use_dynamic_rules") == "true")
        assert not (c.ranks == 1 and c.bind == "none")
        assert list(c.mpi_params) == sorted(c.mpi_params)
    assert {c.params().get("btl_vader_eager_limit") for c in configs} == {None, "4096", "16384", "65536"}
    assert space(SPACE).configurations() == configs  # deterministic
    assert Configuration.from_key(configs[5].key()) == configs[5]


# Constraint entries: layout axes and the two parameters of the spaces below, each with values it can take.
EXCLUDE_ENTRIES = {"ranks": [1, 2, 4], "threads": [1, 2], "bind": ["core", "none"],
                   "btl_vader_eager_limit": [4096, 8192], "btl_vader_single_copy_mechanism": ["cma", "none"]}


@st.composite
def spaces(draw: st.DrawFn) -> dict[str, object]:
    """Search space tables: layout axes, zero to two parameters, zero to three constraints over any of their keys."""
    data: dict[str, object] = {"layout": {
        "ranks": draw(st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=3, unique=True)),
        "threads": draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=2, unique=True)),
        "bind": draw(st.lists(st.sampled_from(["core", "none"]), min_size=1, max_size=2, unique=True))}}
    mpi = {name: {"values": draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))}
           for name, values in EXCLUDE_ENTRIES.items()
           if name not in ("ranks", "threads", "bind") and draw(st.booleans())}
    if mpi:
        data["mpi"] = mpi
    keys = ["ranks", "threads", "bind", *mpi]
    constraints = []
    for _ in range(draw(st.integers(0, 3))):
        table: dict[str, object] = {}
        if draw(st.booleans()):
            table["max_cpus"] = draw(st.integers(1, 8))
        chosen = draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
        if chosen or not table:
            table["exclude"] = {key: draw(st.sampled_from(EXCLUDE_ENTRIES[key])) for key in chosen or ["ranks"]}
        constraints.append(table)
    if constraints:
        data["constraint"] = constraints
    return data


@settings(max_examples=150, deadline=None)
@given(spaces())
def test_the_layouts_checked_before_the_library_is_asked_all_belong_to_the_space(data: dict[str, object]):
    """`hympi tune run` refuses a layout the machine cannot hold before it launches hympi-mpit for the cvars, from
    certain_layouts: each of those must be a layout of the space as parsed against the cvars, and where no
    constraint names a parameter they are all of them."""
    try:
        parsed = parse_space(data, CVARS)
    except UsageError:
        return  # an empty space: refused by parse_space, whatever the early check said
    certain = set(certain_layouts(data))
    assert certain <= set(parsed.layouts())
    names_parameter = any(key in data.get("mpi", {}) for c in data.get("constraint", [])
                          for key in c.get("exclude", {}))
    if not names_parameter:
        assert certain == set(parsed.layouts())


def test_features_are_log2_for_numbers_and_one_hot_for_categories():
    s = space(SPACE)
    names = s.feature_names()
    config = Configuration(2, 1, "none", (("btl_vader_eager_limit", "16384"), ("coll_tuned_alltoall_algorithm",
                                                                                 "pairwise"),
                                          ("coll_tuned_use_dynamic_rules", "true")))
    row = dict(zip(names, s.encode(config), strict=True))
    assert row["ranks_log2"] == 1.0 and row["bind=none"] == 1.0 and row["bind=core"] == 0.0
    assert row["btl_vader_eager_limit_log2"] == pytest.approx(math.log2(16385))
    assert row["coll_tuned_alltoall_algorithm=pairwise"] == 1.0
    assert row["coll_tuned_alltoall_algorithm=(default)"] == 0.0
    unset = dict(zip(names, s.encode(s.default), strict=True))
    assert unset["btl_vader_eager_limit_log2"] == pytest.approx(math.log2(4097))  # the library default, 4096
    assert unset["coll_tuned_alltoall_algorithm=(default)"] == 1.0


@pytest.mark.parametrize(("text", "message"), [
    ("[mpi.btl_vader_eager_limt]\nvalues = [1]", "unknown MPI parameter 'btl_vader_eager_limt'"),
    ("[mpi.btl_vader_eager_limit]\nvalues = ['abc']", "btl_vader_eager_limit: 'abc' is not an unsigned integer"),
    ("[mpi.btl_vader_single_copy_mechanism]\nvalues = ['xpmem']", "'xpmem' is not one of"),
    ("[layout]\nranks = [2]", "the search space is empty"),
    ("[layout]\nranks = [1, 2]\n[[constraint]]\nmax_cpus = 0", "max_cpus must be a positive integer"),
    ("[layout]\nranks = [1, 2]\nbind = ['tight']", "unknown binding 'tight'"),
    ("[layout]\nranks = [0]", "layout.ranks: 0 is not a positive integer"),
    ("[mpi.btl_vader_eager_limit]\nrange = { from = 1, to = 1000000, step = 1 }", "more than 1000 values"),
    ("[mpi.btl_vader_single_copy_mechanism]\nrange = { from = 1, to = 4, step = 1 }", "is not numeric"),
    # nan and inf collapsed the range to its first value; from = nan said "the search space is empty"
    *((f"[mpi.btl_vader_eager_limit]\nrange = {{ {spec} }}", rf"range: {bad} must be a finite number, got")
      for spec, bad in [("from = 1, to = 100, factor = nan", "factor"), ("from = 1, to = 100, factor = inf", "factor"),
                        ("from = 1, to = 100, step = nan", "step"), ("from = 1, to = 100, step = inf", "step"),
                        ("from = nan, to = 100, step = 1", "from"), ("from = 1, to = -inf, step = 1", "to")]),
    # rounded into place: 1.5 to 100 by 1 became 2, 2, 4, 4, 6 ... (round half to even)
    ("[mpi.btl_vader_eager_limit]\nrange = { from = 1.5, to = 100, step = 1 }",
     r"from must be an integer \(btl_vader_eager_limit is an integer parameter\), got 1.5"),
    ("[mpi.btl_vader_eager_limit]\nrange = { from = 1, to = 100, factor = 1.5 }", "factor must be an integer"),
    ("[mpi.btl_vader_eager_limit]\nvalues = [4096]\nrequires = { coll_tuned_use_dynamic_rules = true }",
     "'coll_tuned_use_dynamic_rules' is not a parameter of the space"),
    ("[mpi.btl_vader_eager_limit]\nvalue = [4096]", "unknown key 'value'"),
    ("[tune]\nx = 1", "unknown key 'tune'"),
])
def test_bad_spaces_are_refused_naming_the_problem(text: str, message: str):
    with pytest.raises(UsageError, match=message):
        space(text)


def test_space_files_and_the_documented_example(tmp_path: Path):
    with pytest.raises(UsageError, match="cannot read search space"):
        load_space(tmp_path / "missing.toml", CVARS)
    (tmp_path / "bad.toml").write_text("[layout\n")
    with pytest.raises(UsageError, match="is not valid TOML"):
        load_space(tmp_path / "bad.toml", CVARS)
    example = load_space(REPO / "bench" / "tune" / "example-space.toml", CVARS)
    configs = example.configurations()
    assert len(configs) >= 48
    assert all(c.ranks * c.threads <= 2 for c in configs)


def test_cvar_kinds():
    assert Cvar("x", "int", enum=("false", "true")).canonical("1") == "true"  # Open MPI's booleans over MPI_T
    with pytest.raises(UsageError, match="cannot be set"):
        Cvar("x", "other").canonical("1")
    assert Cvar("x", "double").canonical("1e3") == "1000.0"
    with pytest.raises(UsageError, match="not a finite number"):
        Cvar("x", "double").canonical("inf")


def test_the_app_reads_back_what_was_set_and_what_the_tune_asks(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(mpirun, "mpit_read_env", lambda: "READ_BACK")
    spec = LaunchSpec("hympi-rb3d", 2, 1, mpi_params=(("b", "1"),), mpit_read=("a", "b"))
    assert spec.app_env()["READ_BACK"] == "b,a"
    assert "READ_BACK" not in LaunchSpec("hympi-rb3d", 2, 1).app_env()
    # A tune's default configuration sets nothing but still reads every parameter of the space back.
    s = space(SPACE)
    sweep = tune_params("rb3d", (), "exhaustive", 10).sweep_params(s.default, s)
    assert sweep.mpi_params == () and set(sweep.mpit_read) == {p.name for p in s.parameters}
    assert "READ_BACK" in sweep.spec(2, 1, "core").app_env()
