import sys

from bmoe_daemon.cli import main

sys.exit(main())
