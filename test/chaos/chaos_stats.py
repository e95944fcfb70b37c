"""Counts the chaos drills report in their summary line (shared by the tests and conftest.py)."""

STATS = {"kills": 0, "kills_survived": 0, "resumes": 0, "runs_compared": 0, "left_processes": 0, "duplicates": 0}
