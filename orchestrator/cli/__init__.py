"""The `wirewise` command line: parsing and printing only; the work lives in the stages."""
