# SPDX-License-Identifier: MIT
"""README.md and docs/: the example is the built one, the commands are
exact, the results block is refreshable, and no document carries a diary
(times of day), issue numbers or paths outside the repository."""
import glob
import os
import re
import unittest

import helpers
from obllib import tables


def read(path):
    with open(os.path.join(helpers.ROOT, path), encoding="utf-8") as f:
        return f.read()


class TestReadme(unittest.TestCase):
    def setUp(self):
        self.text = read("README.md")

    def test_example_is_the_built_program(self):
        blocks = re.findall(r"```c\n(.*?)```", self.text, re.S)
        self.assertEqual(len(blocks), 1)
        program = re.sub(r"\A/\* SPDX-License-Identifier: [^*]*\*/\n", "",
                         read("examples/readme_example.c"))
        self.assertEqual(blocks[0], program)  # the file may carry a licence line
        self.assertLessEqual(len(blocks[0].splitlines()), 30)

    def test_the_two_commands(self):
        self.assertIn("\nsh go.sh                  # main job", self.text)
        self.assertIn("\nsh scripts/test_all.sh    # whole test suite", self.text)

    def test_one_compact_results_table(self):
        self.assertEqual(tables.curated_keys(self.text), [tables.SUMMARY_KEY])
        self.assertIn(tables.ENV_MARK, self.text)
        self.assertIn("docs/results/latest.md", self.text)

    def test_no_diary_issue_numbers_or_outside_paths(self):
        bad = re.compile(r"\b\d{1,2}:\d\d(-\d{1,2}:\d\d)? UTC|\bissues? #?\d+|DESIGN\.md|/work/")
        for path in ["README.md"] + sorted(glob.glob(os.path.join(helpers.ROOT, "docs", "*.md"))):
            rel = os.path.relpath(path, helpers.ROOT) if os.path.isabs(path) else path
            for i, line in enumerate(read(rel).splitlines(), 1):
                self.assertIsNone(bad.search(line), f"{rel}:{i}: {line}")


if __name__ == "__main__":
    unittest.main()
