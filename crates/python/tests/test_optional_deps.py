"""pandas, pyarrow and networkx are optional: without them the conversions raise ImportError
saying which package to install, and nothing else breaks."""

from __future__ import annotations

import sys

import pytest

from conftest import ANIMALS, ANIMALS_AT_HOME, ANIMALS_AT_HOME_ROWS


def hide(monkeypatch, module: str) -> None:
    """Makes `import module` raise ImportError, as if it were not installed."""
    monkeypatch.setitem(sys.modules, module, None)


def test_to_pandas_without_pandas(cn, monkeypatch):
    hide(monkeypatch, "pandas")
    r = cn.query(ANIMALS_AT_HOME)
    with pytest.raises(ImportError) as info:
        r.to_pandas()
    message = str(info.value)
    assert "pandas" in message and "pip install pandas" in message
    # The result was not consumed by the failed conversion.
    assert sorted(r.to_list()) == ANIMALS_AT_HOME_ROWS


def test_to_arrow_without_pyarrow(cn, monkeypatch):
    hide(monkeypatch, "pyarrow")
    with pytest.raises(ImportError) as info:
        cn.query(ANIMALS).to_arrow()
    message = str(info.value)
    assert "pyarrow" in message and "pip install pyarrow" in message


def test_to_networkx_without_networkx(tiny, monkeypatch):
    hide(monkeypatch, "networkx")
    with pytest.raises(ImportError) as info:
        tiny.to_networkx()
    message = str(info.value)
    assert "networkx" in message and "pip install networkx" in message
    with pytest.raises(ImportError, match="pip install networkx"):
        tiny.to_networkx(nodes=["dog"])


def test_other_calls_work_without_optional_packages(cn, tiny, monkeypatch):
    for module in ("pandas", "pyarrow", "networkx"):
        hide(monkeypatch, module)
    assert sorted(cn.query(ANIMALS_AT_HOME)) == ANIMALS_AT_HOME_ROWS
    assert cn.count(ANIMALS) == 112
    assert cn.explain(ANIMALS)["matches"] == 112
    assert cn.trust(ANIMALS_AT_HOME, top=1)


def test_conversions_work_again_once_installed(cn, tiny):
    """After the monkeypatching above is undone, the real modules are used."""
    import networkx
    import pandas
    import pyarrow

    assert isinstance(cn.query(ANIMALS_AT_HOME).to_pandas(), pandas.DataFrame)
    assert isinstance(cn.query(ANIMALS_AT_HOME).to_arrow(), pyarrow.Table)
    assert isinstance(tiny.to_networkx(), networkx.MultiDiGraph)
