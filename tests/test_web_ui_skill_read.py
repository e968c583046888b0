"""A skill opens to read on the skills page (issue 31), in Chromium against the real
daemon: its name is a button that shows the instructions, the tools it allows and its
SKILL.md, on a desktop and a phone, with no console error and no request off the daemon."""

from __future__ import annotations

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script

LOOK_ONLY = ("---\nname: look-only\ntitle: Look only\ndescription: Read the code without changing it.\n"
             "allowed-tools: [read_file, list_files]\n---\n\n# Look\n\nRead **every** file named.\n")


def test_a_skills_name_opens_it_to_read(tmp_path):
    require_browser()
    data = tmp_path / "data"
    (data / "skills" / "look-only").mkdir(parents=True)
    (data / "skills" / "look-only" / "SKILL.md").write_text(LOOK_ONLY)
    script = write_script(tmp_path / "script.json", {"rounds": [], "default": {"text": "ok"}})
    with running_daemon(data, "--scripted", str(script)) as d, chromium() as browser:
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page = browser.new_context(viewport=viewport).new_page()
            watch = PageWatch(page, {d.netloc})
            page.goto(f"{d.url}/#/skills")
            opener = page.get_by_role("button", name="Read Look only")
            opener.wait_for()
            # Why the bundled model sees none (issue 32: said in the UI and the README).
            note = page.get_by_role("note").filter(has_text="Not offered to a small local model")
            assert note.is_visible() and "SmolLM2-135M" in note.inner_text()
            assert opener.get_attribute("aria-expanded") == "false"
            opener.click()
            reading = page.get_by_role("region", name="Skill look-only")
            reading.wait_for()
            assert opener.get_attribute("aria-expanded") == "true"
            # The instructions as Markdown, the tools it allows, and the file behind a disclosure.
            assert reading.get_by_role("heading", name="Look").count() == 1
            assert reading.locator(".markdown strong").inner_text() == "every"
            assert "may use only: read_file, list_files." in reading.inner_text()
            reading.get_by_text("SKILL.md", exact=True).click()
            text = reading.locator("pre.skill-file").inner_text()
            assert "allowed-tools: [read_file, list_files]" in text and "Read **every** file named." in text
            screenshot(page, f"{name}-skill-read")
            # A shipped skill that names no tools says the conversation's tools stay.
            page.get_by_role("button", name="Read Review a change").click()
            shipped = page.get_by_role("region", name="Skill review-change")
            shipped.wait_for()
            assert "does not limit the tools" in shipped.inner_text()
            # The name closes it again; Edit replaces the reading with the form.
            opener.click()
            reading.wait_for(state="detached")
            assert opener.get_attribute("aria-expanded") == "false"
            page.get_by_role("button", name="Edit a copy of review-change").click()
            page.get_by_role("form", name="Edit review-change").wait_for()
            assert shipped.count() == 0
            watch.check()
            page.context.close()
