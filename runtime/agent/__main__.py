import sys

from runtime.agent.loop import main

sys.exit(main(sys.argv[1:]))
