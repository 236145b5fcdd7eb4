"""Drives jobq's dashboard in a real headless Chromium (selenium), as an operator would.

Run by the Swift test DashboardBrowserTests with a `jobq dashboard` process already serving a
store: it loads the queues page, sees a job enqueued by another process arrive without a
reload, opens a dead job, clicks Retry and sees it become ready, searches the jobs page with the
filter language, retries every match after a confirmation that shows the count, reads a
workflow's drawing (each step's state) and follows a step to its job, and writes screenshots of
the main pages. Exits non-zero, saying what it saw, when anything is not as expected.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def click(driver, by, selector):
    """Finds and clicks an element; False when a live update replaced it in between (the
    click was not made), so that a wait tries again with the element as it is now."""
    try:
        driver.find_element(by, selector).click()
        return True
    except StaleElementReferenceException:
        return False


def badge_text(driver):
    """The job page's state badge, or None while the page is being replaced."""
    try:
        return driver.find_element(By.CSS_SELECTOR, "dl.fields .badge").text
    except WebDriverException:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--jobq", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--dead", required=True)
    parser.add_argument("--workflow", required=True)
    parser.add_argument("--shots", required=True)
    parser.add_argument("--bulk-filter", required=True)
    parser.add_argument("--bulk-count", required=True)
    parser.add_argument("--succeeded", required=True, help="jobs that succeeded before the page was opened")
    args = parser.parse_args()
    os.makedirs(args.shots, exist_ok=True)

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                 "--hide-scrollbars"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    # The pages update in place from the live stream: an element found a moment ago may have
    # been replaced, so waits look again rather than fail on a stale reference.
    wait = WebDriverWait(driver, 20, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))
    seen = {}
    try:
        # The queues page, connected to the live stream.
        driver.get(args.base + "/")
        wait.until(lambda d: "live-status on" in d.find_element(By.ID, "live-status").get_attribute("outerHTML"))
        seen["queues_title"] = driver.title
        assert "Queues" in driver.title, driver.title
        assert "web" in driver.find_element(By.TAG_NAME, "table").text
        driver.save_screenshot(os.path.join(args.shots, "queues.png"))

        # A job enqueued by another process shows up without a reload.
        driver.execute_script("window.__jobqMarker = 42;")
        subprocess.run([args.jobq, "--db", args.db, "enqueue", "sum", "--queue", "browser-live", "--param", "a=1", "--param", "b=2"],
                       check=True, capture_output=True)
        wait.until(lambda d: "browser-live" in d.find_element(By.ID, "live").text)
        seen["marker_after_update"] = driver.execute_script("return window.__jobqMarker;")
        assert seen["marker_after_update"] == 42, "the page reloaded instead of updating in place"
        seen["updates"] = driver.find_element(By.TAG_NAME, "body").get_attribute("data-updates")

        # A dead job: retry it from its page and see it ready.
        driver.get(args.base + "/jobs/" + args.dead)
        seen["before_retry"] = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "dl.fields .badge").text)
        assert seen["before_retry"] == "dead", seen["before_retry"]
        driver.save_screenshot(os.path.join(args.shots, "job.png"))
        wait.until(lambda d: click(d, By.XPATH, "//button[normalize-space()='Retry']"))
        # The retry's redirect and the live update of the same page may replace the badge while
        # it is read (a CI run's chromedriver once answered that read with a bare error): the
        # wait reads it again until it says ready, and keeps what it read.
        seen["after_retry"] = wait.until(lambda d: badge_text(d) == "ready" and "ready")
        assert driver.current_url.endswith("/jobs/" + args.dead), driver.current_url

        # Search, see how many match, retry them all after a confirmation that shows the count.
        driver.get(args.base + "/jobs")
        box = wait.until(lambda d: d.find_element(By.NAME, "where"))
        box.clear()
        box.send_keys(args.bulk_filter)
        box.submit()
        matches = args.bulk_count + " jobs match."
        wait.until(lambda d: matches in d.find_element(By.TAG_NAME, "body").text)
        seen["search_value"] = driver.find_element(By.NAME, "where").get_attribute("value")
        assert seen["search_value"] == args.bulk_filter, seen["search_value"]
        driver.save_screenshot(os.path.join(args.shots, "search.png"))
        wait.until(lambda d: click(d, By.PARTIAL_LINK_TEXT, "Retry all"))
        seen["confirm"] = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "p.confirm").text)
        assert (args.bulk_count + " jobs now") in seen["confirm"], seen["confirm"]
        driver.save_screenshot(os.path.join(args.shots, "bulk-confirm.png"))
        button = "Retry " + args.bulk_count + " jobs"
        wait.until(lambda d: click(d, By.XPATH, "//button[normalize-space()='" + button + "']"))
        seen["bulk_result"] = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "p.summary").text)
        assert seen["bulk_result"].startswith("Retried " + args.bulk_count + " of " + args.bulk_count), seen["bulk_result"]

        # The workflow's graph: a box per step showing its state; a click on one opens its job.
        driver.get(args.base + "/workflows/" + args.workflow)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg.workflow-graph a.wf-step")) == 4)
        steps = driver.find_elements(By.CSS_SELECTOR, "svg.workflow-graph a.wf-step")
        seen["graph_states"] = [step.find_element(By.CSS_SELECTOR, "text.wf-state").text for step in steps]
        assert seen["graph_states"] == [step.get_attribute("data-state") for step in steps], seen["graph_states"]
        publish = [step for step in steps if "publish" in step.text]
        assert len(publish) == 1, [step.text for step in steps]
        job = publish[0].get_attribute("data-job")
        publish[0].click()
        wait.until(lambda d: d.current_url.endswith("/jobs/" + job))
        seen["graph_click"] = driver.current_url
        assert ("#" + job) in driver.find_element(By.TAG_NAME, "h1").text, driver.find_element(By.TAG_NAME, "h1").text

        # The history: four charts; the outcome bars' titles add up to the jobs that succeeded,
        # and a bar leads to the jobs that finished in its minute.
        driver.get(args.base + "/history?window=1h")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "figure.history-chart")) == 4)
        bars = driver.find_elements(By.CSS_SELECTOR, "svg.history a.h-bucket")
        titles = [bar.find_element(By.TAG_NAME, "title").get_attribute("textContent") for bar in bars]
        # An SVG link's href is an SVGAnimatedString as a property: read the attribute itself.
        first_bucket = bars[0].get_dom_attribute("href")
        seen["history_succeeded"] = sum(int(title.split(": ")[1].split(" succeeded")[0]) for title in titles)
        assert seen["history_succeeded"] == int(args.succeeded), (titles, args.succeeded)
        time.sleep(0.3)
        driver.save_screenshot(os.path.join(args.shots, "history.png"))
        driver.get(args.base + first_bucket)
        wait.until(lambda d: "/jobs?where=" in d.current_url)
        seen["history_click_rows"] = len(driver.find_elements(By.CSS_SELECTOR, "table tbody tr"))
        assert seen["history_click_rows"] > 0, driver.page_source[:500]

        for name, path in [("jobs", "/jobs"), ("workflow", "/workflows/" + args.workflow), ("schedules", "/schedules")]:
            driver.get(args.base + path)
            wait.until(lambda d: d.find_element(By.TAG_NAME, "h1"))
            time.sleep(0.3)
            driver.save_screenshot(os.path.join(args.shots, name + ".png"))
        seen["screenshots"] = sorted(os.listdir(args.shots))
    except Exception as error:  # say what was on the page
        # Where it was raised too: a bare WebDriverException says nothing by itself.
        print(json.dumps({"error": repr(error), "at": traceback.format_exc(limit=-2), "seen": seen,
                          "url": driver.current_url,
                          "page": driver.page_source[:2000]}), file=sys.stderr)
        driver.quit()
        sys.exit(1)
    driver.quit()
    print(json.dumps({"ok": True, "seen": seen}))


if __name__ == "__main__":
    main()
