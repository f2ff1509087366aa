from argocd_image_updater.cli.main import main

main()
