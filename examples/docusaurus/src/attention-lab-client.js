// A Docusaurus client module: it runs in the browser only, never during the
// server-side render. The elements are defined once; pages rendered later by
// the client-side router upgrade on insertion.
import ExecutionEnvironment from '@docusaurus/ExecutionEnvironment';

if (ExecutionEnvironment.canUseDOM) {
  import('attention-lab/components').then(({ defineAll }) => defineAll());
}
