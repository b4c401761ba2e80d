// `main!` with no case would run nothing and pass.
rag_eval::main!();
