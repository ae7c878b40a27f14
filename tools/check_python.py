"""Refuses, saying what to do instead, a Python that the course's pinned set-up cannot install on (make course)."""
import platform
import sys

OLDEST, NEWEST = (3, 11), (3, 14)   # the Pythons that requirements.txt's pins (torch 2.13.0, numpy 2.4.6) are built for
SUPPORTED = f"{OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}"   # said in the message below

if not OLDEST <= sys.version_info[:2] <= NEWEST:
    sys.exit(f"The course needs Python {SUPPORTED} (its pinned packages are built for those), but {sys.executable} "
             f"is {platform.python_version()}. Point the commands at another one, e.g.: make PYTHON=python3.12 course")
if sys.platform == "darwin" and platform.machine() == "x86_64":
    sys.exit("PyTorch publishes no torch 2.3 or newer for Intel Macs (macOS x86_64): run the course in Google Colab "
             "(README, 'Other ways to run it'). On an Apple-silicon Mac, use an arm64 Python, not one under Rosetta.")
