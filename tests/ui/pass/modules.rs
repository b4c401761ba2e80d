// Cases in modules, listed by path; a private one included. Attribute values may come from
// `macro_rules!` fragments.
use rag_eval::prelude::*;

mod cases {
    use rag_eval::prelude::*;
    use rag_eval::rag_eval;

    pub struct Fixed;

    #[async_trait::async_trait]
    impl Retriever<TokenLevel> for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        async fn retrieve(&self, _: &str, _: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
            Ok(Vec::new())
        }
    }

    #[rag_eval(dataset = "examples/data/questions.jsonl")]
    fn private() -> self::Fixed {
        Fixed
    }

    pub mod nested {
        #[rag_eval::rag_eval(dataset = "examples/data/questions.jsonl")]
        pub async fn r#type() -> super::Fixed {
            super::Fixed
        }
    }
}

macro_rules! sized_case {
    ($name:ident, $size:expr, $k:expr) => {
        #[rag_eval::rag_eval(dataset = "examples/data/questions.jsonl", k = $k)]
        fn $name() -> Bm25Retriever {
            Bm25Retriever::new(RecursiveCharacterChunker::new($size, 0))
        }
    };
}

sized_case!(small, 200, 10);

#[allow(dead_code)]
mod harness {
    use super::*;

    rag_eval::main!(cases::private, self::cases::nested::r#type, small,);
}

pub fn main() {
    assert_eq!(cases::private::__rag_eval_case().name, "private");
    assert_eq!(cases::nested::r#type::__rag_eval_case().name, "type");
    assert_eq!(small::__rag_eval_case().k, 10);
}
