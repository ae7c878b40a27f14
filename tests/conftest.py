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
    parser.addoption("--training", action="store_true", default=False,
                     help="also run the tests that retrain notebook 10's models (about a minute)")


def pytest_collection_modifyitems(config, items):
    for option, target in (("browser", "make test-browser"), ("training", "make test-training")):
        if config.getoption(f"--{option}"):
            continue
        skip = pytest.mark.skip(reason=f"{option} test: run with `{target}`")
        for item in items:
            if option in item.keywords:
                item.add_marker(skip)
