// GraphQL Code Generator's client preset with persisted documents: the
// typed documents of operations.graphql, each with its hash, and
// persisted-documents.json, the manifest of hash to text that the server
// loads with -trusted-documents.
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: "../schema.graphql",
  documents: ["operations.graphql"],
  generates: {
    "generated/gql/": {
      preset: "client",
      presetConfig: { persistedDocuments: true },
      config: { scalars: { Time: "string", ID: "string" } },
    },
  },
};
export default config;
