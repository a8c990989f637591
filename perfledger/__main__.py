from perfledger import store
from perfledger.cli import main

store.lean_process()
store.exit_process(main())
