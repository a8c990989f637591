from perfledger.cli import main
from perfledger.process import exit_process, lean_process

lean_process()
exit_process(main())
