from genointerp.cli import main

main()
