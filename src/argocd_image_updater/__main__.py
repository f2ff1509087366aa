from argocd_image_updater.cli.console import main

main()
