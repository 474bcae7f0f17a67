"""The one rule for "did this output move?": numbers under a tolerance, everything else exact."""

from shared.services.output_compare import Tolerance, compare, compare_outputs


def test_equal_numbers_are_identical_whatever_the_tolerance():
    assert compare(1250.5, 1250.5).verdict == "identical"
    assert compare(3, 3.0).verdict == "identical"


def test_a_number_within_the_absolute_bound_passes_and_reports_its_difference():
    result = compare(100.0, 100.004, Tolerance(absolute=0.01))
    assert result.verdict == "within" and result.passed
    assert abs(result.difference - 0.004) < 1e-12


def test_a_relative_bound_scales_with_the_expected_value():
    assert compare(1_000_000.0, 1_000_009.0, Tolerance(relative=1e-5)).verdict == "within"
    assert compare(10.0, 10.001, Tolerance(relative=1e-5)).verdict == "changed"


def test_either_bound_suffices():
    tolerance = Tolerance(absolute=0.5, relative=1e-9)
    assert compare(2.0, 2.4, tolerance).verdict == "within"


def test_without_a_tolerance_any_numeric_move_is_a_change():
    result = compare(0.1 + 0.2, 0.3)
    assert result.verdict == "changed" and not result.passed


def test_text_booleans_and_errors_are_exact_even_with_a_tolerance():
    loose = Tolerance(absolute=1e9, relative=1.0)
    assert compare("2026-01-31", "2026-02-01", loose).verdict == "changed"
    assert compare(True, 1, loose).verdict == "changed"
    assert compare("#N/A", "#N/A", loose).verdict == "identical"
    assert compare("#N/A", 0, loose).verdict == "changed"
    assert compare(None, 0, loose).verdict == "changed"


def test_a_range_takes_its_worst_cell_and_largest_difference():
    result = compare([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.001], [3.0, 3.98]], Tolerance(absolute=0.01))
    assert result.verdict == "changed"
    assert abs(result.difference - 0.02) < 1e-9
    assert compare([1, 2], [1, 2, 3]).verdict == "changed"
    assert compare([1, 2], 1).verdict == "changed"


def test_outputs_are_compared_by_name_and_a_missing_one_is_changed():
    result = compare_outputs(
        {"premium": 120.0, "band": "B"}, {"premium": 120.004}, {"premium": Tolerance(absolute=0.01)}
    )
    assert result["premium"].verdict == "within"
    assert result["band"].verdict == "changed"
