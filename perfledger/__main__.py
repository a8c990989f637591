import sys

from perfledger.cli import main

sys.exit(main())
