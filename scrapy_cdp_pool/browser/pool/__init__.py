"""The pool of CDP connections, the servers behind them, and what each server
can do."""
