"""Counter-based random numbers (Philox) and what draws from them: fills, dropout, multinomial."""
