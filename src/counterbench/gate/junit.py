"""The gate's outcomes as a JUnit XML file (what CI systems display), written with the user's umask."""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from counterbench.errors import UserError
from counterbench.fileperms import as_user_file
from counterbench.gate.rules import Outcome, Thresholds


def junit_xml(outcomes: Sequence[Outcome], thresholds: Thresholds, source: str = "") -> str:
    """One ``<testsuite>``; a ``<testcase>`` per model × rule, failed or skipped (not evaluated) as such."""
    failures = sum(o.failed for o in outcomes)
    skipped = sum(o.status == "not evaluated" for o in outcomes)
    suites = ET.Element("testsuites", name="counterbench fairness gate", tests=str(len(outcomes)),
                        failures=str(failures), errors="0", skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name="counterbench fairness gate", tests=str(len(outcomes)),
                          failures=str(failures), errors="0", skipped=str(skipped))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="thresholds", value=thresholds.describe())
    if source:
        ET.SubElement(props, "property", name="analysis", value=source)
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname=f"counterbench.{o.model}", name=f"{o.rule} {o.limit}",
                             time="0")
        if o.failed:
            failure = ET.SubElement(case, "failure", message=f"{o.model}: {o.rule} = {o.value} (limit {o.limit})",
                                    type="FairnessThresholdExceeded")
            failure.text = "\n".join(o.details)
        elif o.status == "not evaluated":
            ET.SubElement(case, "skipped", message="; ".join(o.details) or "not evaluated")
        else:
            ET.SubElement(case, "system-out").text = f"{o.rule} = {o.value} (limit {o.limit})"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_junit(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically, readable as the umask allows (like any file the user makes)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        as_user_file(tmp)
        os.replace(tmp, path)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    return path
