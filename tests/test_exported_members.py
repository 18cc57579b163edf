import dreamgym_env


def test_all_exports_import():
    for name in dreamgym_env.__all__:
        assert getattr(dreamgym_env, name) is not None, name


def test_all_is_sorted_and_unique():
    assert list(dreamgym_env.__all__) == sorted(set(dreamgym_env.__all__))
