"""The fenced children's memory limits fit inside the functions that start them.

A child's address-space limit (``RLIMIT_AS``) is what a huge or hostile workbook should meet: a
limit above the function's own memory lets the child take the whole Lambda down instead, so each
function that starts a fenced reader is given its limit explicitly, below its MemorySize with room
for the function's own process.
"""

from __future__ import annotations

import pytest

from shared.config import Settings
from tests.infra.test_template import _function_setting, _functions, load_template

# Each function that starts a fenced child, and the settings that bound those children.
FENCED_READERS = {
    "ApiFunction": ("upload_parse_memory_mb",),  # uploads, a pinned engine's model
    "ChecksFunction": ("fidelity_memory_mb", "upload_parse_memory_mb"),  # the formulas check, a better engine's model
}
# What the function's own Python process (the service imported, a request in hand) is left at least.
FUNCTION_HEADROOM_MB = 256
API_MEMORY_MB = 1024  # the Globals MemorySize the API function runs with


@pytest.fixture(scope="module")
def template() -> dict:
    return load_template()


def _variables(template: dict, function: dict) -> dict:
    globals_ = template["Globals"]["Function"].get("Environment", {}).get("Variables", {})
    own = function["Properties"].get("Environment", {}).get("Variables", {})
    return {**globals_, **own}


@pytest.mark.parametrize("function_name, settings", sorted(FENCED_READERS.items()))
def test_each_fenced_reader_is_told_a_limit_below_its_function_memory(template, function_name, settings):
    function = _functions(template)[function_name]
    memory = int(_function_setting(template, function, "MemorySize"))
    own = function["Properties"].get("Environment", {}).get("Variables", {})
    for setting in settings:
        variable = f"SHEETCALC_{setting.upper()}"
        # GIVEN the function's own environment: the limit is set there, next to its MemorySize
        assert variable in own, f"{function_name} does not set {variable}"
        limit = int(own[variable])
        # THEN the child's limit leaves the function its own room
        assert limit + FUNCTION_HEADROOM_MB <= memory, (function_name, variable, limit, memory)


def test_function_level_settings_are_ones_the_code_reads(template):
    fields = set(Settings.model_fields)
    for name, function in _functions(template).items():
        for variable in function["Properties"].get("Environment", {}).get("Variables", {}):
            if variable.startswith("SHEETCALC_"):
                assert variable.removeprefix("SHEETCALC_").lower() in fields, (name, variable)


def test_the_defaults_fit_the_smallest_function_that_reads_workbooks():
    # Without the template (sheetcalc dev, another deployment), the defaults still fit the API's
    # 1024 MB and the checks function's 2048 MB.
    default = {name: field.default for name, field in Settings.model_fields.items()}
    assert default["upload_parse_memory_mb"] + FUNCTION_HEADROOM_MB <= API_MEMORY_MB
    assert default["fidelity_memory_mb"] + FUNCTION_HEADROOM_MB <= 2048


def test_the_fidelity_fence_defaults_to_the_setting(monkeypatch):
    from shared.calc.fidelity import fence

    seen = {}

    def run(command, **_kwargs):
        seen["memory_mb"] = int(command[command.index("--memory-mb") + 1])
        raise fence.subprocess.TimeoutExpired(command, 0)

    monkeypatch.setattr(fence.subprocess, "run", run)
    monkeypatch.setattr(fence, "get_settings", lambda: Settings(fidelity_memory_mb=1234))
    # WHEN the check is fenced without naming a limit (as `sheetcalc check` does)
    report = fence.check_isolated(b"PK", "formulas", timeout_s=1)
    # THEN the child gets the setting's limit, not one of its own
    assert (report.status, seen["memory_mb"]) == ("timeout", 1234)
