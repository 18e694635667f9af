import sys

from core.lessons.cli import main

sys.exit(main())
