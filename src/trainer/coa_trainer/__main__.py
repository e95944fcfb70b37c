"""`python -m coa_trainer …` entry point."""

from .cli import main

if __name__ == "__main__":
    main()
