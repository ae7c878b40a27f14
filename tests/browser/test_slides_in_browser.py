"""Every notebook as slides (`make slides`: Voilà's reveal template, tools/slides.sh) in headless Chromium.

At 1024x768, a classroom projector's screen, the test opens each notebook's slides, steps through every slide,
and checks what a room would see: no cell shows an error, every sub-slide fits the screen (but a printed function
longer than one, which scrolls), every widget renders as a widget on its own slide,
moving a slider redraws it (and does not change the slide), and no request the page makes leaves 127.0.0.1.
Screenshots go to artifacts/browser/ (three a notebook; SLIDES_SCREENSHOTS=all saves every slide).
"""
import json
import os
import re
import secrets
import subprocess
import sys
import time

import pytest

from .test_notebooks_in_browser import (  # noqa: F401 (browser is a fixture)
    NOTEBOOKS,
    ROOT,
    SCREENSHOTS,
    SLIDER_NOTEBOOKS,
    browser,
    free_port,
    wait_until_serving,
)

pytestmark = pytest.mark.browser

ALL_SCREENSHOTS = os.environ.get("SLIDES_SCREENSHOTS") == "all"
TALLER_THAN_A_SCREEN = ("def flash_forward(",)   # a sub-slide of one printed function, longer than a screen: it scrolls
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def widget_outputs(path) -> int:
    """How many widgets the notebook displays (its stored outputs; Voilà runs it afresh and must show as many)."""
    cells = json.loads(path.read_text())["cells"]
    return sum(WIDGET_VIEW in out.get("data", {}) for cell in cells for out in cell.get("outputs", []))


@pytest.fixture(scope="module")
def slides():
    """The slides server, as `make slides` starts it (tools/slides.sh), over the whole notebooks folder; the kernel
    of each notebook left behind stops 10 s after its page closes."""
    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(["bash", str(ROOT / "tools" / "slides.sh"), "notebooks", f"--port={port}",
                               f"--token={token}", "--no-browser"],
                              cwd=ROOT, env=dict(os.environ, PYTHON=sys.executable, SLIDES_KERNEL_TIMEOUT="10"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_until_serving(server, f"{base}/voila/static/voila.js", "The slides server")
    yield base, token
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()


def recorded(page):
    """Every URL the page asks for (documents, scripts, styles, fonts, images, fetches and websockets). A request
    for any other machine is recorded, then stopped in the browser: the test fails on it, and nothing goes out."""
    urls = []
    page.on("request", lambda request: urls.append(request.url))
    page.on("websocket", lambda socket: urls.append(socket.url))
    page.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/])[a-z]+://"), lambda route: route.abort())
    return urls


def leaving(urls, base):
    """The URLs that leave the machine: any but 127.0.0.1's (data: and blob: never leave the page)."""
    local = (base + "/", base.replace("http", "ws", 1) + "/", "data:", "blob:", "about:")
    return sorted({url for url in urls if not url.startswith(local)})


def close(page):
    """Leave the page as a browser tab does: Voilà's beforeunload shuts its kernel down, then close it."""
    page.goto("about:blank")
    page.close()


def open_slides(page, base, token, name, urls):
    """Open a notebook's slides: the page arrives as Voilà runs the notebook (under 9 s of cells on a quiet laptop; a
    busy machine slows notebook 07's timing cells many times over). Nothing it loads may come from elsewhere."""
    page.goto(f"{base}/voila/render/{name}?token={token}", timeout=300_000)
    assert not leaving(urls, base), f"requests left 127.0.0.1: {leaving(urls, base)}"
    page.wait_for_function("window.Reveal && Reveal.isReady() && !document.getElementById('loading')",
                           timeout=60_000, polling=500)


def widget_views(page):
    """The top-level widget views the page rendered (a widget's own parts are .jupyter-widgets too)."""
    return page.locator(".jp-OutputArea-output > .jupyter-widgets")


def output_snapshot(slide):
    """What a slider should change: the images and text of the widget's slide."""
    return slide.evaluate("s => [...s.querySelectorAll('img')].map(i => i.src.length + ':' + i.src.slice(-80))"
                          ".join('|') + '#' + [...s.querySelectorAll('.widget-output, .widget-html-content')]"
                          ".map(o => o.textContent).join('|')")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_slides_show_every_widget_working_and_nothing_from_outside(slides, browser, path):  # noqa: F811
    base, token = slides
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1024, "height": 768})   # a classroom projector's screen
    urls = recorded(page)
    try:
        open_slides(page, base, token, path.name, urls)
        expected = widget_outputs(path)
        page.wait_for_function(f"document.querySelectorAll('.jp-OutputArea-output > .jupyter-widgets').length"
                               f" >= {expected}", timeout=60_000, polling=250)
        assert widget_views(page).count() == expected, f"{path.name} displays {expected} widget(s)"
        body = page.locator(".reveal .slides").inner_text()
        assert "Error displaying widget" not in body and "Error rendering" not in body
        assert "There was an error when executing cell" not in body, "a cell raised an error"
        stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        assert not [t for t in stderr.all_inner_texts() if "Traceback" in t or "Error" in t]
        plain = page.locator(".jp-OutputArea-output pre").all_inner_texts()
        assert not [t for t in plain if "(children=" in t], "a widget was shown as text, not rendered"
        assert page.locator(".jp-InputArea-editor").count() == 0, "a code cell shows its code (the README says not)"
        inert = page.evaluate("[...document.querySelectorAll('.reveal a[href*=\".ipynb\"]:not([href*=\"://\"])')]"
                              ".map(a => getComputedStyle(a).pointerEvents)")
        assert inert and set(inert) == {"none"}, "a link to another notebook can be clicked (Voilà answers 403)"

        # Step through every slide (each vertical one too): a widget must show, inside its slide, on its own.
        slides_seen, widget_slides = 0, []
        for h, stack in enumerate(page.evaluate("Reveal.getHorizontalSlides().map(s => "
                                                "Math.max(1, s.querySelectorAll(':scope > section').length))")):
            for v in range(stack):
                page.evaluate(f"Reveal.slide({h}, {v})")
                page.wait_for_function(f"Reveal.getIndices().h === {h} && (Reveal.getIndices().v || 0) === {v}")
                page.evaluate("document.fonts.ready.then(() => true)")   # heights measured in the fonts that stay
                slides_seen += 1
                current = page.evaluate_handle("Reveal.getCurrentSlide()").as_element()
                views = current.query_selector_all(".jp-OutputArea-output > .jupyter-widgets")
                for view in views:
                    box, frame = view.bounding_box(), current.bounding_box()
                    assert box and box["width"] > 50 and box["height"] > 20, f"a widget on slide {h}.{v} is empty"
                    assert frame["x"] - 1 <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1, \
                        f"the widget on slide {h}.{v} is wider than its slide"
                    assert box["y"] + box["height"] <= 768 + 1, f"the widget on slide {h}.{v} runs below the screen"
                if views:
                    widget_slides.append((h, v))
                tall, scrolls = current.evaluate("s => [s.scrollHeight > s.clientHeight + 1, "
                                                 "getComputedStyle(s).overflowY === 'auto']")
                assert scrolls or not tall, f"slide {h}.{v} is taller than the screen but cannot scroll"
                below, texts = current.evaluate(  # screen px its last cell ends below the slide (4: its padding)
                    "s => { s.scrollTop = 0; const cells = [...s.querySelectorAll('.jp-Cell')]; return [Math.max(0, "
                    "...cells.map(c => c.getBoundingClientRect().bottom)) - s.getBoundingClientRect().bottom, "
                    "cells.map(c => c.innerText.trim())]; }")
                assert below <= 4 or len(texts) == 1 and texts[0].startswith(TALLER_THAN_A_SCREEN), \
                    f"slide {h}.{v} ends {below:.0f} px below the screen: {texts[0][:60]!r}"
                wide = current.evaluate("s => [...s.querySelectorAll('.jp-OutputArea-output, .jp-OutputArea-output "
                                        "pre')].filter(e => e.scrollWidth > e.clientWidth + 1).length")
                assert not wide, f"{wide} printed result(s) on slide {h}.{v} scroll sideways"

                if ALL_SCREENSHOTS:
                    page.screenshot(path=str(SCREENSHOTS / f"{path.stem}_slide_{h:02d}_{v}.png"))
                elif (h, v) == (0, 0):
                    page.screenshot(path=str(SCREENSHOTS / f"{path.stem}_slides_title.png"))
        assert slides_seen == page.evaluate("Reveal.getTotalSlides()")
        assert widget_slides, "no slide shows a widget"

        # Move the first slider with its keys, as an instructor would: the widget redraws, the slide stays.
        sliders = page.locator(".reveal .slides .widget-slider")
        if path.stem in SLIDER_NOTEBOOKS:
            assert sliders.count() >= 1, "this notebook's widget has a slider"
        h, v = widget_slides[0]
        if sliders.count():
            h, v = page.evaluate("el => { const s = el.closest('.slides > section'); const all = "
                                 "Reveal.getHorizontalSlides(); const sub = el.closest('.slides > section > section');"
                                 " return [all.indexOf(s), sub ? [...s.children].filter(c => c.tagName === 'SECTION')"
                                 ".indexOf(sub) : 0]; }", sliders.first.element_handle())
            page.evaluate(f"Reveal.slide({h}, {v})")
            page.wait_for_timeout(300)
            slide = page.evaluate_handle("Reveal.getCurrentSlide()").as_element()
            before = output_snapshot(slide)
            handle = sliders.first.locator(".noUi-handle").first
            handle.scroll_into_view_if_needed()
            handle.focus()  # noUiSlider moves by one step per arrow key, for every kind of slider
            for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowLeft"):
                handle.press(key)
                deadline = time.time() + 5
                while output_snapshot(slide) == before and time.time() < deadline:
                    page.wait_for_timeout(200)
                if output_snapshot(slide) != before:
                    break
            assert output_snapshot(slide) != before, "moving the slider did not change the output"
            assert page.evaluate("[Reveal.getIndices().h, Reveal.getIndices().v || 0]") == [h, v], \
                "the slider's arrow keys changed the slide"
        else:
            page.evaluate(f"Reveal.slide({h}, {v})")
            page.wait_for_timeout(300)
        if not ALL_SCREENSHOTS:
            page.screenshot(path=str(SCREENSHOTS / f"{path.stem}_slides_widget.png"))
            last = len(page.evaluate("Reveal.getHorizontalSlides()")) - 1
            page.evaluate(f"Reveal.slide({last}, 0)")
            page.wait_for_timeout(300)
            page.screenshot(path=str(SCREENSHOTS / f"{path.stem}_slides_last.png"))
        assert not leaving(urls, base), f"requests left 127.0.0.1: {leaving(urls, base)}"
    finally:
        close(page)


def test_the_request_recorder_sees_what_voilas_stock_reveal_template_fetches(slides, browser):  # noqa: F811
    """A negative control: Voilà's own reveal template asks CDNs for jQuery and Font Awesome; the check above
    sees such requests (stopped in the browser, as every request for another machine is)."""
    base, token = slides
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    urls = recorded(page)
    try:
        page.goto(f"{base}/voila/render/{NOTEBOOKS[0].name}?token={token}&template=reveal", timeout=120_000)
        page.wait_for_function("document.querySelector('.reveal')", timeout=120_000)
        assert any(url.startswith("https://") for url in leaving(urls, base)), urls
    finally:
        close(page)
