"""The shared argument checkers: TypeError for types, ValueError for values."""

import numpy as np
import pytest

from tf_input import _validation as v


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_check_bool_takes_bools(value):
    assert v.check_bool("flag", value) is bool(value)


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_check_bool_rejects_other_types(value):
    with pytest.raises(
        TypeError,
        match=r"^`flag` must be True or False\. Received: "
        rf"flag={value!r} \(of type {type(value).__name__}\)\.$",
    ):
        v.check_bool("flag", value)


def test_check_bool_may_allow_none():
    assert v.check_bool("flag", None, allow_none=True) is None
    with pytest.raises(TypeError, match="must be True, False or None"):
        v.check_bool("flag", "no", allow_none=True)


def test_check_type_never_takes_a_bool_for_a_number():
    assert v.check_type("x", 3, int, "an int") == 3
    with pytest.raises(TypeError, match=r"`x` must be an int.*of type bool"):
        v.check_type("x", True, int, "an int")
    assert v.check_type("x", True, (bool, int), "a bool or an int") is True
    with pytest.raises(TypeError, match=r"`x` must be a dict.*x=\[1\]"):
        v.check_type("x", [1], dict, "a dict")


@pytest.mark.parametrize(
    "checker, good, bad_type, bad_value",
    [
        (v.check_positive_int, np.int64(3), 3.0, 0),
        (lambda n, x: v.check_int(n, x, 2), 2, "2", 1),
        (lambda n, x: v.check_optional_int(n, x, 1), 1, True, 0),
        (v.check_positive_float, 0.5, "0.5", float("inf")),
    ],
)
def test_number_checkers_tell_types_from_values(
    checker, good, bad_type, bad_value
):
    assert checker("n", good) == good
    assert type(checker("n", good)) in (int, float)
    with pytest.raises(TypeError, match=r"`n` must be .*\(of type "):
        checker("n", bad_type)
    with pytest.raises(ValueError, match=rf"`n` must be .*n={bad_value!r}"):
        checker("n", bad_value)


def test_check_integer_array():
    np.testing.assert_array_equal(
        v.check_integer_array("ids", [1, 2], "ints"), [1, 2]
    )
    assert v.check_integer_array("ids", [], "ints").dtype == np.int64
    with pytest.raises(TypeError, match=r"`ids` must be ints.*float64"):
        v.check_integer_array("ids", [1.5], "ints")
    with pytest.raises(TypeError, match=r"`ids` must be ints.*'abc' \(str\)"):
        v.check_integer_array("ids", "abc", "ints")
    with pytest.raises(ValueError, match=r"`ids` must be ints"):
        v.check_integer_array("ids", [[1], [2, 3]], "ints")


def test_describe_abbreviates_long_arrays():
    assert v.describe([1, 2]) == "[1, 2]"
    assert v.describe(np.arange(20)) == "array of shape (20,) [0, 1, 2, 3, ...]"
