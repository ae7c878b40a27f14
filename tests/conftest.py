import matplotlib
import matplotlib.pyplot as plt
import pytest

matplotlib.use("Agg")  # figures drawn by widget functions never need a screen in tests


@pytest.fixture
def presenting():
    """presenting(build) -> build() made in presenter mode, which is switched off again afterwards."""
    from helpers import plotting

    def build(factory):
        plotting.presenter_mode(True)
        try:
            return factory()
        finally:
            plotting.presenter_mode(False)
    return build


@pytest.fixture(autouse=True)
def close_figures():
    """Close every figure a test drew, so that hundreds of tests don't pile them up in memory."""
    yield
    plt.close("all")


def pytest_addoption(parser):
    parser.addoption("--browser", action="store_true", default=False,
                     help="also run tests/browser: every notebook in JupyterLab in headless Chromium")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--browser"):
        return
    skip = pytest.mark.skip(reason="browser test: run with `make test-browser`")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)
