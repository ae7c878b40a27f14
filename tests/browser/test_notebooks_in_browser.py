"""Every notebook, run in JupyterLab in a real (headless) browser.

Strict nbval cannot see what a student sees: whether a widget renders as a
widget, and whether moving a slider redraws its figure. This test opens each
notebook in JupyterLab, clears it, runs all cells, and checks exactly that.
Screenshots go to artifacts/browser/. Run it with `make test-browser`.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SCREENSHOTS = ROOT / "artifacts" / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
#: Notebooks that must have a slider; in every notebook that has one, moving it must redraw its output.
SLIDER_NOTEBOOKS = {"00_start_here", "01_static_embeddings", "02_similarity_and_softmax",
                    "05_why_scale_by_sqrt_dk", "06_luong_to_self_attention", "07_pytorch_and_cost",
                    "08_word_order_and_positions", "09_many_heads_and_masks", "10_attention_in_a_trained_model",
                    "11_never_store_the_matrix"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(server, url: str, name: str) -> None:
    """Wait up to 60 s for `url` to answer; if it never does, stop `server` and fail."""
    for _ in range(120):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.5)
    server.kill()
    pytest.fail(f"{name} did not start within 60 s")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on localhost over a copy of the notebooks (running them must not touch the originals)."""
    root = tmp_path_factory.mktemp("lab")
    for path in NOTEBOOKS:
        shutil.copy(path, root / path.name)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".config"), JUPYTERLAB_WORKSPACES_DIR=str(root / ".ws"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--ServerApp.open_browser=False"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_serving(server, f"{base}/api/status?token={token}", "JupyterLab")
    yield base, token
    server.terminate()
    server.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    try:  # imported here, not skipped: a missing Playwright must fail `make test-browser`, not pass it silently
        import playwright.sync_api as playwright
    except ImportError as error:
        pytest.fail(f"Playwright is not installed ({error}). The browser tests need it: install "
                    "requirements-browser.txt (python -m pip install -r requirements-browser.txt).", pytrace=False)
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def run_all(page, base, token, name):
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext", timeout=60_000)
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel"
                           " || document.querySelector('.jp-Dialog')", timeout=60_000)
    if accept.count():
        accept.first.click()
    page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                           timeout=60_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
            const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel;
            return prompts.length > 0 && prompts.every(t => /\\[\\d+\\]/.test(t)) && kernel?.status === 'idle';
        }""",
        timeout=120_000, polling=500,
    )


def output_snapshot(cell):
    """What a slider should change: the images and widget-output text of one cell."""
    return cell.evaluate(
        "c => [...c.querySelectorAll('img')].map(i => i.src.length + ':' + i.src.slice(-80)).join('|') + '#'"
        " + [...c.querySelectorAll('.widget-output, .widget-html-content, .jp-OutputArea-output pre')]"
        ".map(o => o.textContent).join('|')"
    )


def changed(page, cell, before, seconds: float = 5.0) -> bool:
    """Wait up to `seconds` for the cell's output to differ from `before`."""
    deadline = time.time() + seconds
    while output_snapshot(cell) == before and time.time() < deadline:
        page.wait_for_timeout(200)
    return output_snapshot(cell) != before


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_its_widgets_work(lab, browser, path):
    base, token = lab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1024, "height": 768})   # a classroom projector's screen
    try:
        run_all(page, base, token, path.name)
        page.wait_for_timeout(1000)  # let widget views finish rendering
        stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        texts = stderr.all_inner_texts()
        assert not [t for t in texts if "Traceback" in t or "Error" in t], f"error output in {path.name}: {texts}"
        stored = sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})   # the widgets it displays
                     for cell in json.loads(path.read_text())["cells"] for out in cell.get("outputs", []))
        views = ".jp-OutputArea-output > .jupyter-widgets"   # a top-level widget view (its parts are nested deeper)
        page.wait_for_function(f"document.querySelectorAll('{views}').length >= {stored}", timeout=60_000, polling=250)
        assert stored >= 1 and page.locator(views).count() == stored, "each widget rendered as a widget, not a still"
        body = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in body and "Error rendering" not in body

        sliders = page.locator(".jp-OutputArea-output .widget-slider")
        if path.stem in SLIDER_NOTEBOOKS:
            assert sliders.count() >= 1, "this notebook's widget has a slider"
        if sliders.count():
            slider = sliders.first
            slider.scroll_into_view_if_needed()
            cell = page.locator(".jp-CodeCell", has=slider).first
            before = output_snapshot(cell)
            handle = slider.locator(".noUi-handle").first
            handle.focus()  # noUiSlider moves by one step per arrow key, for every kind of slider
            for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowLeft"):
                handle.press(key)
                if changed(page, cell, before):
                    break
            cell.screenshot(path=str(SCREENSHOTS / f"{path.stem}_slider.png"))
            assert output_snapshot(cell) != before, "moving the slider did not change the output"

        # A choice (toggle buttons or a drop-down) must redraw its widget too.
        toggles = page.locator(".jp-OutputArea-output .widget-toggle-buttons button:not(.mod-active)")
        dropdowns = page.locator(".jp-OutputArea-output .widget-dropdown select")
        if toggles.count() or dropdowns.count():
            control = toggles.first if toggles.count() else dropdowns.first
            control.scroll_into_view_if_needed()
            cell = page.locator(".jp-CodeCell", has=control).first
            before = output_snapshot(cell)
            if toggles.count():
                control.click()
                ok = changed(page, cell, before)
            else:
                options = control.locator("option")
                index = control.evaluate("s => s.selectedIndex")
                control.select_option(index=(index + 1) % options.count())
                control.dispatch_event("change")  # ipywidgets listens for change events
                ok = changed(page, cell, before)
            cell.screenshot(path=str(SCREENSHOTS / f"{path.stem}_choice.png"))
            assert ok, "changing the widget's choice did not change the output"

        # So must a switch (a checkbox).
        checkboxes = page.locator(".jp-OutputArea-output .widget-checkbox input[type=checkbox]")
        if checkboxes.count():
            box = checkboxes.first
            box.scroll_into_view_if_needed()
            cell = page.locator(".jp-CodeCell", has=box).first
            before = output_snapshot(cell)
            box.click()
            ok = changed(page, cell, before)
            cell.screenshot(path=str(SCREENSHOTS / f"{path.stem}_switch.png"))
            assert ok, "ticking the widget's checkbox did not change the output"
    finally:
        page.screenshot(path=str(SCREENSHOTS / f"{path.stem}.png"))
        page.close()
