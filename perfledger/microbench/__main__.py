from perfledger.microbench.run import main

raise SystemExit(main())
