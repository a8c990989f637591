import sys

from perfledger import store
from perfledger.cli import main

store.lean_process()
sys.exit(main())
