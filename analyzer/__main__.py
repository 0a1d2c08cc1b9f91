from nsys_diagnose.main import main

main()
