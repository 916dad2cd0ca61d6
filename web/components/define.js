// Side-effect entry: defines every attention-lab element.
//   <script type="module" src="…/attention-lab/web/components/define.js"></script>
import { defineAll } from './index.js';

defineAll();
